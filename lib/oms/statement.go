package oms

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The in-toto and OMS identifiers.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://model_signing/signature/v1.0"
	// PredicateTypeV01 is model_signing v0.2.0's predicate: digests in the subjects,
	// no serialization. Verified for old signatures, never written (spec §5.1).
	PredicateTypeV01 = "https://model_signing/Digests/v0.1"
)

// The statement as written: Go structs keep the field order fixed, so the same
// manifest always gives the same bytes (model_signing's order varies from run to
// run, as its protobuf Struct is a map). The order is the spec's Appendix A.
type statementOut struct {
	Type          string       `json:"_type"`
	Subject       []subjectOut `json:"subject"`
	PredicateType string       `json:"predicateType"`
	Predicate     predicateOut `json:"predicate"`
}

type subjectOut struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type predicateOut struct {
	Resources     []resourceOut    `json:"resources"`
	Serialization serializationOut `json:"serialization"`
}

type resourceOut struct {
	Name      string `json:"name"`
	Digest    string `json:"digest"`
	Algorithm string `json:"algorithm"`
}

type serializationOut struct {
	Method        string   `json:"method"`
	HashType      string   `json:"hash_type"`
	ShardSize     int64    `json:"shard_size,omitempty"`
	AllowSymlinks bool     `json:"allow_symlinks"`
	IgnorePaths   []string `json:"ignore_paths,omitempty"`
}

// RootDigest is the subject digest: SHA-256 over the resources' raw digests in
// their listed order (spec §6.5.1).
func RootDigest(rs []Resource) [32]byte {
	h := sha256.New()
	for _, r := range rs {
		h.Write(r.Digest)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// Statement returns the in-toto statement of m, indented by two spaces as
// model_signing writes it.
func (m *Manifest) Statement() ([]byte, error) {
	if len(m.Resources) == 0 {
		return nil, errors.New("nothing to sign: the model's files are all empty (the shards method lists no empty file, and the spec requires at least one resource)")
	}
	root := RootDigest(m.Resources)
	s := statementOut{
		Type:          StatementType,
		Subject:       []subjectOut{{Name: m.ModelName, Digest: map[string]string{"sha256": hex.EncodeToString(root[:])}}},
		PredicateType: PredicateType,
		Predicate: predicateOut{
			Resources: make([]resourceOut, len(m.Resources)),
			Serialization: serializationOut{
				Method: m.Serialization.Method, HashType: m.Serialization.HashType,
				ShardSize: m.Serialization.ShardSize, AllowSymlinks: m.Serialization.AllowSymlinks,
				IgnorePaths: m.Serialization.IgnorePaths,
			},
		},
	}
	for i, r := range m.Resources {
		s.Predicate.Resources[i] = resourceOut{Name: r.Name, Digest: hex.EncodeToString(r.Digest), Algorithm: r.Algorithm}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// The statement as read: lenient about the fields' order and about what
// model_signing's versions wrote (shard_size as 8.0, ignore_paths absent).
type statementIn struct {
	Type          *string     `json:"_type"`
	Subject       []subjectIn `json:"subject"`
	PredicateType *string     `json:"predicateType"`
	Predicate     *struct {
		Resources     []resourceIn `json:"resources"`
		Serialization *struct {
			Method        *string      `json:"method"`
			HashType      *string      `json:"hash_type"`
			ShardSize     *json.Number `json:"shard_size"`
			AllowSymlinks *bool        `json:"allow_symlinks"`
			IgnorePaths   []string     `json:"ignore_paths"`
		} `json:"serialization"`
	} `json:"predicate"`
}

type subjectIn struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type resourceIn struct {
	Name      string `json:"name"`
	Digest    string `json:"digest"`
	Algorithm string `json:"algorithm"`
}

// ParseStatement reads an OMS in-toto statement (a DSSE payload) into the manifest
// it signs, checking what the spec requires of it: the statement and predicate
// types, one subject whose digest is the resources' root digest, resources with
// canonical relative names, hex digests and the serialization's algorithm, and no
// name twice. The v0.1 predicate of model_signing v0.2.0 is read too.
func ParseStatement(payload []byte) (*Manifest, error) {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var st statementIn
	if err := d.Decode(&st); err != nil {
		return nil, fmt.Errorf("statement: not JSON: %w", err)
	}
	if d.More() {
		return nil, errors.New("statement: data after the JSON object")
	}
	if st.Type == nil || *st.Type != StatementType {
		return nil, fmt.Errorf("statement: _type is %s, expected %q", quoteOpt(st.Type), StatementType)
	}
	if st.PredicateType == nil {
		return nil, errors.New("statement: no predicateType")
	}
	switch *st.PredicateType {
	case PredicateType:
	case PredicateTypeV01:
		return parseV01(st)
	default:
		return nil, fmt.Errorf("statement: predicateType is %q, expected %q", *st.PredicateType, PredicateType)
	}
	if len(st.Subject) != 1 {
		return nil, fmt.Errorf("statement: %d subjects, expected exactly one (the model)", len(st.Subject))
	}
	subj := st.Subject[0]
	if subj.Name == "" {
		return nil, errors.New("statement: the subject has no name")
	}
	want, err := hex.DecodeString(subj.Digest["sha256"])
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("statement: subject digest sha256 %q is not 64 hex digits", subj.Digest["sha256"])
	}
	p := st.Predicate
	if p == nil || p.Serialization == nil {
		return nil, errors.New("statement: the predicate has no serialization")
	}
	ser := p.Serialization
	if ser.Method == nil || ser.HashType == nil || ser.AllowSymlinks == nil {
		return nil, errors.New("statement: serialization needs method, hash_type and allow_symlinks")
	}
	s := Serialization{Method: *ser.Method, HashType: *ser.HashType, AllowSymlinks: *ser.AllowSymlinks, IgnorePaths: ser.IgnorePaths}
	if ser.ShardSize != nil {
		f, err := strconv.ParseFloat(string(*ser.ShardSize), 64)
		if err != nil || f != float64(int64(f)) || f <= 0 || f > 1<<53 {
			return nil, fmt.Errorf("statement: shard_size %s is not a positive integer", *ser.ShardSize)
		}
		s.ShardSize = int64(f)
	}
	if err := ValidateSerialization(s); err != nil {
		return nil, fmt.Errorf("statement: %w", err)
	}
	if len(p.Resources) == 0 {
		return nil, errors.New("statement: no resources (the spec requires at least one)")
	}
	m := &Manifest{ModelName: subj.Name, Serialization: s, Resources: make([]Resource, len(p.Resources))}
	seen := make(map[string]bool, len(p.Resources))
	for i, r := range p.Resources {
		res, err := parseResource(r, s)
		if err != nil {
			return nil, fmt.Errorf("statement: resource %d (%q): %w", i, r.Name, err)
		}
		if seen[res.Name] {
			return nil, fmt.Errorf("statement: resource %q listed twice", res.Name)
		}
		seen[res.Name] = true
		m.Resources[i] = res
	}
	if s.Method == MethodShards {
		if err := checkCoverage(m.Resources); err != nil {
			return nil, fmt.Errorf("statement: %w", err)
		}
	}
	if got := RootDigest(m.Resources); !bytes.Equal(got[:], want) {
		return nil, fmt.Errorf("statement: the subject digest %x is not the root digest %x of the resources", want, got)
	}
	return m, nil
}

func quoteOpt(s *string) string {
	if s == nil {
		return "missing"
	}
	return strconv.Quote(*s)
}

func parseResource(r resourceIn, s Serialization) (Resource, error) {
	digest, err := hex.DecodeString(r.Digest)
	if err != nil || r.Digest == "" || strings.ToLower(r.Digest) != r.Digest {
		return Resource{}, fmt.Errorf("digest %q is not lowercase hex", r.Digest)
	}
	if size := newHash(s.HashType).Size(); len(digest) != size {
		return Resource{}, fmt.Errorf("digest has %d bytes, %s has %d", len(digest), s.HashType, size)
	}
	// model_signing writes "sha256-sharded-SIZE" for shards; the spec the bare name.
	if r.Algorithm != s.HashType && r.Algorithm != fmt.Sprintf("%s-sharded-%d", s.HashType, s.ShardSize) {
		return Resource{}, fmt.Errorf("algorithm %q, but the serialization's hash_type is %q", r.Algorithm, s.HashType)
	}
	res := Resource{Name: r.Name, Algorithm: r.Algorithm, Digest: digest, Path: r.Name, End: -1}
	if s.Method == MethodShards {
		// The range is the last two colon-separated fields: a file name may hold colons.
		i := strings.LastIndexByte(r.Name, ':')
		j := -1
		if i > 0 {
			j = strings.LastIndexByte(r.Name[:i], ':')
		}
		if j < 0 {
			return Resource{}, errors.New("a shard name is PATH:START:END")
		}
		start, err1 := canonicalInt(r.Name[j+1 : i])
		end, err2 := canonicalInt(r.Name[i+1:])
		if err := cmp.Or(err1, err2); err != nil {
			return Resource{}, err
		}
		if start < 0 || end <= start || end-start > s.ShardSize || start%s.ShardSize != 0 {
			return Resource{}, fmt.Errorf("bad byte range in a shard name (shard size %d)", s.ShardSize)
		}
		res.Path, res.Start, res.End = r.Name[:j], start, end
	}
	if res.Path != "." { // model_signing names a single-file model's file "."
		if err := checkRelPath(res.Path); err != nil {
			return Resource{}, err
		}
		if c := path.Clean(res.Path); c != res.Path {
			return Resource{}, fmt.Errorf("path %q is not canonical (model_signing and apr write %q; another spelling of a path is not taken as an alias)", res.Path, c)
		}
	}
	return res, nil
}

// canonicalInt reads a shard offset as model_signing and apr write one: decimal
// digits, no sign, no leading zero. Python's int() would also take "+0", "00" or
// " 1", which would make several names for one shard.
func canonicalInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("offset %q in a shard name is not a decimal integer", s)
	}
	if strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("offset %q in a shard name is not canonical (write %d)", s, n)
	}
	return n, nil
}

// checkCoverage checks that the shards of each file cover its bytes exactly once,
// as the shards model_signing and apr make of a file do: [0, S), [S, 2S), ... up to
// the file's end. model_signing compares the whole manifest it recomputes with the
// signed one, so a statement that leaves a range out, or lists one twice, never
// verifies there; here it is refused when read. Where the last shard ends (the
// file's size) is checked against the model by Compare.
func checkCoverage(rs []Resource) error {
	byPath := map[string][]Resource{}
	var paths []string
	for _, r := range rs {
		if byPath[r.Path] == nil {
			paths = append(paths, r.Path)
		}
		byPath[r.Path] = append(byPath[r.Path], r)
	}
	for _, p := range paths {
		shards := byPath[p]
		slices.SortFunc(shards, func(a, b Resource) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
		var pos int64
		for _, r := range shards {
			switch {
			case r.Start > pos:
				return fmt.Errorf("the shards of %q leave a gap: bytes %d-%d are not covered (a statement lists every byte of a file once)", p, pos, r.Start)
			case r.Start < pos:
				return fmt.Errorf("the shards of %q overlap: bytes %d-%d are covered twice (a statement lists every byte of a file once)", p, r.Start, min(pos, r.End))
			}
			pos = r.End
		}
	}
	return nil
}

// parseV01 reads model_signing v0.2.0's statements: one subject per file, named by
// its path, with its sha256; no serialization (files, sha256, no symlinks) and no
// root digest to check.
func parseV01(st statementIn) (*Manifest, error) {
	if len(st.Subject) == 0 {
		return nil, errors.New("statement: no subjects")
	}
	s := Serialization{Method: MethodFiles, HashType: SHA256}
	m := &Manifest{ModelName: "compat-undefined-not-present", Serialization: s}
	seen := map[string]bool{}
	for i, subj := range st.Subject {
		r, err := parseResource(resourceIn{Name: subj.Name, Digest: subj.Digest["sha256"], Algorithm: SHA256}, s)
		if err != nil {
			return nil, fmt.Errorf("statement: subject %d (%q): %w", i, subj.Name, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("statement: subject %q listed twice", r.Name)
		}
		seen[r.Name] = true
		m.Resources = append(m.Resources, r)
	}
	sortResources(m.Resources)
	return m, nil
}
