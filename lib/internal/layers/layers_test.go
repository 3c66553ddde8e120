package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/apr-go/apr/"

// TestLayers parses the imports of every non-test Go file of the module and fails
// for an import that does not go down the layers, and for a package without a layer.
// Tests may import upwards (a converter's test may save a fixture with lib/apr).
func TestLayers(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("a property of the source tree, checked by the native leg")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]map[string]bool{} // package dir -> module packages it imports
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < len(Layer)/2 {
		t.Fatalf("found only %d packages under %s", len(imports), root)
	}
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		lp, ok := Layer[p]
		if !ok {
			t.Errorf("%s has no layer: add it to layers.Layer and docs/DESIGN.md", p)
			continue
		}
		for im := range imports[p] {
			li, ok := Layer[im]
			if ok && li >= lp {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must go down the layers", p, lp, im, li)
			}
		}
	}
	for p := range Layer {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("layers.Layer names %s, which does not exist", p)
		}
	}
}
