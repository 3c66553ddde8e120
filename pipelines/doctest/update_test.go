package doctest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// updateDecl is the one way a test declares that it rewrites golden files
// (docs/DESIGN.md, "Tests").
const updateDecl = `var update = flag.Bool("update", false, "rewrite golden files")`

// otherSwitches are other ways of asking a test to rewrite its files, which are not used.
var otherSwitches = regexp.MustCompile(`flag\.(Bool|String)\("(update|golden|regen|rewrite)[^"]*"|Getenv\("[A-Z_]*(UPDATE|GOLDEN|REGEN)[A-Z_]*"\)`)

// TestUpdateConvention keeps the -update convention the only one: every test file
// that has such a switch declares it as updateDecl.
func TestUpdateConvention(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("a property of the source tree, checked by the native leg")
	}
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != dir) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		for i, line := range strings.Split(string(b), "\n") {
			if !otherSwitches.MatchString(line) {
				continue
			}
			if strings.HasPrefix(line, updateDecl) {
				users++
				continue
			}
			if rel == filepath.Join("pipelines", "doctest", "update_test.go") {
				continue // this file's own pattern
			}
			t.Errorf("%s:%d: %s\n\tgolden files are rewritten with -update, declared as\n\t%s", rel, i+1, strings.TrimSpace(line), updateDecl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if users == 0 {
		t.Error("no test declares -update: the pattern is out of date")
	}
}
