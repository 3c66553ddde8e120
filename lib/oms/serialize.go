package oms

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"

	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/printable"
)

// Serialization methods and hash algorithms of the spec (its algorithm registry).
// blake3 is in the registry too but optional: refused here with a clear error.
const (
	MethodFiles  = "files"
	MethodShards = "shards"
	SHA256       = "sha256"
	BLAKE2b      = "blake2b"

	// DefaultShardSize is the spec's default for the shards method (1 GB, decimal).
	DefaultShardSize = 1_000_000_000
)

// DefaultIgnores are excluded from every model (spec §6.2): top-level paths only.
var DefaultIgnores = []string{".git", ".gitattributes", ".github", ".gitignore"}

// Serialization is the predicate's "serialization" object: how a model was
// enumerated and hashed.
type Serialization struct {
	Method        string   // MethodFiles or MethodShards
	HashType      string   // SHA256 or BLAKE2b
	ShardSize     int64    // MethodShards only
	AllowSymlinks bool     // follow symbolic links (hash their targets under the link's name)
	IgnorePaths   []string // excluded paths relative to the model root, as recorded
}

// Resource is one file (files method) or one byte range of a file (shards method).
type Resource struct {
	Name      string // as in the statement: "dir/file" or "dir/file:start:end"
	Algorithm string
	Digest    []byte
	// Path, Start and End are Name taken apart; End is -1 for the files method.
	Path       string
	Start, End int64
}

// Manifest is what a statement lists: a model's resources in canonical order.
type Manifest struct {
	ModelName     string
	Serialization Serialization
	Resources     []Resource
	// Files counts the files hashed (a file of the shards method has many
	// resources, an empty one none). Zero for a manifest read from a statement.
	Files int
	// Bytes counts the bytes hashed.
	Bytes int64
}

// HashOptions tune Hash beyond what the statement records.
type HashOptions struct {
	// Extra paths to exclude, relative to the model root, that are not recorded
	// (the signature file while verifying, say).
	Exclude []string
	// Only, when set, limits hashing to the files it returns true for (verification
	// with --ignore-unsigned-files). Files left out are neither hashed nor listed.
	Only func(rel string) bool
	// Workers hashing at once; <= 0 means runtime.GOMAXPROCS.
	Workers int
	// Warn receives the spec's warnings (a symlink cycle, a link leaving the model).
	Warn func(msg string)
}

// NoFilesError: the model has no file left after the exclusions (the spec refuses
// to sign an empty model).
type NoFilesError struct{ Root string }

func (e *NoFilesError) Error() string {
	return printable.String(e.Root) + ": no files after the exclusions (an empty model is refused by the spec)"
}

// file is one regular file of a model: its canonical name, where to read it, and
// its state when it was listed, which it must keep while it is hashed.
type file struct {
	rel, abs string
	size     int64
	info     fs.FileInfo
}

// ValidateSerialization checks the parameters a statement or a user gave.
func ValidateSerialization(s Serialization) error {
	switch s.HashType {
	case SHA256, BLAKE2b:
	case "blake3":
		return fmt.Errorf("hash_type blake3 is not supported by apr (sha256 and blake2b are)")
	default:
		return fmt.Errorf("unknown hash_type %q (the spec has sha256, blake2b and blake3)", s.HashType)
	}
	switch s.Method {
	case MethodFiles:
		if s.ShardSize != 0 {
			return fmt.Errorf("shard_size %d given for the files method", s.ShardSize)
		}
	case MethodShards:
		if s.ShardSize <= 0 {
			return fmt.Errorf("the shards method needs a positive shard_size, not %d", s.ShardSize)
		}
	default:
		return fmt.Errorf("unknown serialization method %q (files or shards)", s.Method)
	}
	for _, p := range s.IgnorePaths {
		if err := checkRelPath(p); err != nil {
			return fmt.Errorf("ignore path %q: %w", p, err)
		}
	}
	return nil
}

// checkRelPath refuses what the spec forbids in a name or an ignore path.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return errors.New("absolute path")
	case p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return errors.New("leaves the model root")
	case strings.ContainsRune(p, 0):
		return errors.New("contains a NUL byte")
	}
	return nil
}

func newHash(hashType string) hash.Hash {
	if hashType == BLAKE2b {
		h, _ := blake2b.New512(nil) // no key: cannot fail
		return h
	}
	return sha256.New()
}

// Hash enumerates the model at root (a directory, or a single file) and hashes it
// as s says. Symlinks are refused unless s.AllowSymlinks; other non-regular files
// are refused always. The resources come back in model_signing's order (by path
// component, then by shard offset), which the root digest depends on.
func Hash(root string, s Serialization, o HashOptions) (*Manifest, error) {
	if err := ValidateSerialization(s); err != nil {
		return nil, err
	}
	files, err := enumerate(root, s, o)
	if err != nil {
		return nil, err
	}
	type unit struct {
		f          *file
		start, end int64 // end -1: the whole file
	}
	var units []unit
	m := &Manifest{ModelName: ModelName(root), Serialization: s, Files: len(files)}
	for i := range files {
		f := &files[i]
		m.Bytes += f.size
		if s.Method == MethodFiles {
			units = append(units, unit{f, 0, -1})
			continue
		}
		for start := int64(0); start < f.size; start += s.ShardSize {
			units = append(units, unit{f, start, min(start+s.ShardSize, f.size)})
		}
	}
	m.Resources = make([]Resource, len(units))
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(units)))
	errs := make([]error, len(units))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			h := newHash(s.HashType)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(units) {
					return
				}
				u := units[i]
				h.Reset()
				n, err := hashRange(h, buf, u.f, u.start, u.end)
				r := Resource{Name: u.f.rel, Algorithm: s.HashType, Path: u.f.rel, Start: u.start, End: u.end, Digest: h.Sum(nil)}
				if u.end >= 0 {
					r.Name = shardName(u.f.rel, u.start, u.end)
					if err == nil && n != u.end-u.start {
						err = fmt.Errorf("%s: %d bytes at offset %d, expected %d: the file changed while it was hashed", printable.String(u.f.rel), n, u.start, u.end-u.start)
					}
				}
				m.Resources[i], errs[i] = r, err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sortResources(m.Resources)
	return m, nil
}

// testHookHashed, when set by a test, runs after a range's bytes were read and
// before they are checked against the file's state.
var testHookHashed func(abs string)

// hashRange hashes [start, end) of a file, or all of it from start when end < 0.
// The file must be the one listed, in the state it was listed in (same file, size
// and modification time), when it is opened and again after its bytes were read:
// otherwise what was hashed may not be what the file holds, and a signature made
// or checked over it would vouch for bytes nobody can read back.
func hashRange(h hash.Hash, buf []byte, lf *file, start, end int64) (int64, error) {
	f, err := regfile.Open(lf.abs) // a file swapped for a FIFO since it was listed is refused, not waited on
	if err != nil {
		return 0, quoted(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, quoted(err)
	}
	if err := unchanged(lf, fi); err != nil {
		return 0, err
	}
	var r io.Reader = io.NewSectionReader(f, start, 1<<62)
	if end >= 0 {
		r = io.NewSectionReader(f, start, end-start)
	}
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, buf)
	if err != nil {
		return n, fmt.Errorf("%s: %w", printable.String(lf.abs), err)
	}
	if testHookHashed != nil {
		testHookHashed(lf.abs)
	}
	// The path, not the open file: a file renamed over it is a change too.
	if fi, err = os.Stat(lf.abs); err != nil {
		return n, quoted(err)
	}
	if err := unchanged(lf, fi); err != nil {
		return n, err
	}
	if end < 0 && n != lf.size {
		return n, fmt.Errorf("%s: %d bytes read, %d listed: the file changed while it was hashed", printable.String(lf.abs), n, lf.size)
	}
	return n, nil
}

// quoted returns err with the path of an *fs.PathError made printable: a file
// name may hold an escape sequence or a line feed (printable.String).
func quoted(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: printable.String(pe.Path), Err: pe.Err}
	}
	return err
}

// unchanged says whether fi is still the file lf was listed as. A write within
// the file system's timestamp granularity that keeps the size is not seen.
func unchanged(lf *file, fi fs.FileInfo) error {
	var what string
	switch {
	case !os.SameFile(lf.info, fi):
		what = "another file was put in its place"
	case fi.Size() != lf.info.Size() || !fi.ModTime().Equal(lf.info.ModTime()):
		what = fmt.Sprintf("%d bytes modified %s, listed as %d bytes modified %s", fi.Size(), fi.ModTime().Format(time.RFC3339Nano),
			lf.info.Size(), lf.info.ModTime().Format(time.RFC3339Nano))
	default:
		return nil
	}
	return fmt.Errorf("%s: the file changed while it was hashed (%s): hash the model when nothing writes to it", printable.String(lf.abs), what)
}

func shardName(p string, start, end int64) string {
	return p + ":" + strconv.FormatInt(start, 10) + ":" + strconv.FormatInt(end, 10)
}

// sortResources orders as model_signing does: by path compared component by
// component (Python's PurePosixPath ordering), then by shard start.
func sortResources(rs []Resource) {
	slices.SortStableFunc(rs, func(a, b Resource) int {
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c
		}
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
}

func comparePaths(a, b string) int {
	for a != "" || b != "" {
		var ea, eb string
		ea, a, _ = strings.Cut(a, "/")
		eb, b, _ = strings.Cut(b, "/")
		if c := strings.Compare(ea, eb); c != 0 {
			return c
		}
	}
	return 0
}

// ModelName is the subject name: the model path's last element.
func ModelName(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	return filepath.Base(abs)
}

// enumerate lists the regular files of the model, with the spec's exclusions.
func enumerate(root string, s Serialization, o HashOptions) ([]file, error) {
	li, err := os.Lstat(root)
	if err != nil {
		return nil, quoted(err)
	}
	if li.Mode()&fs.ModeSymlink != 0 && !s.AllowSymlinks {
		return nil, fmt.Errorf("%s is a symbolic link (give --allow-symlinks to follow links)", printable.String(root))
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, quoted(err)
	}
	if fi.Mode().IsRegular() {
		// A single-file model: its resource is named by the file's basename (spec §6.1.2).
		name := filepath.Base(root)
		if !utf8.ValidString(name) {
			return nil, fmt.Errorf("%s: file name is not valid UTF-8 (the spec cannot record it)", printable.String(root))
		}
		return []file{{rel: name, abs: root, size: fi.Size(), info: fi}}, nil
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is neither a file nor a directory", printable.String(root))
	}
	ignored := map[string]bool{}
	for _, p := range slices.Concat(DefaultIgnores, s.IgnorePaths, o.Exclude) {
		ignored[path.Clean(p)] = true
	}
	w := walker{s: s, o: o, ignored: ignored, visiting: map[string]bool{}}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, quoted(err)
	}
	realAbs, _ := filepath.Abs(real)
	w.rootReal = realAbs
	if err := w.dir(root, "", realAbs); err != nil {
		return nil, quoted(err)
	}
	if len(w.files) == 0 {
		return nil, &NoFilesError{root}
	}
	return w.files, nil
}

type walker struct {
	s        Serialization
	o        HashOptions
	ignored  map[string]bool
	visiting map[string]bool // real paths of the directories being walked (cycles)
	rootReal string
	files    []file
}

// isIgnored: an ignore path excludes itself and, as a directory, its subtree.
func (w *walker) isIgnored(rel string) bool {
	for p := rel; ; {
		if w.ignored[p] {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

func (w *walker) warn(format string, args ...any) {
	if w.o.Warn != nil {
		w.o.Warn(fmt.Sprintf(format, args...))
	}
}

func (w *walker) dir(abs, rel, real string) error {
	if w.visiting[real] {
		w.warn("%s: symbolic link cycle (it leads back to %s), not followed", printable.String(abs), printable.String(real))
		return nil
	}
	w.visiting[real] = true
	defer delete(w.visiting, real)
	entries, err := os.ReadDir(abs)
	if err != nil {
		return quoted(err)
	}
	for _, e := range entries {
		name := e.Name()
		childAbs := filepath.Join(abs, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if w.isIgnored(childRel) {
			continue
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("%s: file name is not valid UTF-8 (the spec cannot record it)", printable.String(childAbs))
		}
		mode := e.Type()
		target := childAbs
		if mode&fs.ModeSymlink != 0 {
			if !w.s.AllowSymlinks {
				return fmt.Errorf("%s is a symbolic link (give --allow-symlinks to follow links)", printable.String(childAbs))
			}
			t, err := filepath.EvalSymlinks(childAbs)
			if err != nil {
				return fmt.Errorf("%s: broken symbolic link: %w", printable.String(childAbs), quoted(err))
			}
			if t, _ = filepath.Abs(t); t != w.rootReal && !strings.HasPrefix(t, w.rootReal+string(filepath.Separator)) {
				w.warn("%s: symbolic link to %s, outside the model", printable.String(childAbs), printable.String(t))
			}
			fi, err := os.Stat(t)
			if err != nil {
				return quoted(err)
			}
			mode, target = fi.Mode().Type(), t
		}
		switch {
		case mode.IsDir():
			realChild := target
			if target == childAbs {
				realChild = filepath.Join(real, name)
			}
			if err := w.dir(childAbs, childRel, realChild); err != nil {
				return quoted(err)
			}
		case mode.IsRegular():
			if w.o.Only != nil && !w.o.Only(childRel) {
				continue
			}
			fi, err := os.Stat(target)
			if err != nil {
				return quoted(err)
			}
			w.files = append(w.files, file{rel: childRel, abs: target, size: fi.Size(), info: fi})
		default:
			return fmt.Errorf("%s is not a regular file (%v): a model holds files and directories only", printable.String(childAbs), mode)
		}
	}
	return nil
}
