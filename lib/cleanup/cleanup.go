// Package cleanup keeps the list of temporary files and directories a program has
// created and not yet renamed into place or removed (the pending output of -o FILE
// where it has a name, a staged output directory), so that a program stopped by a signal removes them before it exits
// instead of leaving them behind. A leaf: every package that creates such a file
// registers it.
package cleanup

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

var (
	mu      sync.Mutex
	pending = map[string]int{} // path -> registrations
)

// Register records path as temporary; done forgets it again (after the rename or
// removal that ends its life) and may be called more than once.
func Register(path string) (done func()) {
	mu.Lock()
	pending[path]++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			if pending[path]--; pending[path] <= 0 {
				delete(pending, path)
			}
			mu.Unlock()
		})
	}
}

// RemoveAll removes every registered path (a directory with its contents) and forgets
// them. A signal handler calls it just before the process exits.
func RemoveAll() {
	mu.Lock()
	defer mu.Unlock()
	for p := range pending {
		os.RemoveAll(p)
		delete(pending, p)
	}
}

// CreateTemp is os.CreateTemp for a spool, a file read back through the returned
// *os.File only: its name is removed at once, so the file lives as long as it is open
// and even a process killed by SIGKILL leaves nothing (the kernel frees it). Where an
// open file cannot be removed, it is registered instead. remove closes it (and removes
// and forgets a registered one); callers defer it.
func CreateTemp(dir, pattern string) (f *os.File, remove func(), err error) {
	f, err = os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, nil, err
	}
	if os.Remove(f.Name()) == nil {
		return f, func() { f.Close() }, nil
	}
	done := Register(f.Name())
	return f, func() { f.Close(); os.Remove(f.Name()); done() }, nil
}

// MkdirTemp is os.MkdirTemp with the directory registered; remove removes it with its
// contents and forgets it.
func MkdirTemp(dir, pattern string) (path string, remove func(), err error) {
	path, err = os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", nil, err
	}
	done := Register(path)
	return path, func() { os.RemoveAll(path); done() }, nil
}

// MkdirTempPerm is MkdirTemp with the directory made with mode perm less the umask,
// as mkdir(2) makes any new directory (os.MkdirTemp makes it 0700 whatever the
// umask): a directory staged to be renamed into place gets the mode a new directory
// should have.
func MkdirTempPerm(dir, prefix string, perm os.FileMode) (path string, remove func(), err error) {
	for try := 0; ; try++ {
		path = filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err = os.Mkdir(path, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || try == 10000 {
			return "", nil, err
		}
	}
	done := Register(path)
	return path, func() { os.RemoveAll(path); done() }, nil
}
