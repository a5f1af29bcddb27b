package jinid

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/jinid/jinid"

// layers ranks the top-level folders, lowest first: a package may import
// from its own folder and from those ranked below it.
var layers = []string{"internal", "discovery", "services", "announce", "cmd"}

// imports lists, for every package of the module, the module packages
// its non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d importing packages: is the walk right?", len(out))
	}
	return out
}

func top(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

// No import points up the layers or across them in a circle: top-level
// folders import only their own and those below.
func TestImportDirections(t *testing.T) {
	for pkg, deps := range imports(t) {
		rank := slices.Index(layers, top(pkg))
		if rank < 0 {
			if pkg == "." {
				continue
			}
			t.Errorf("%s: top-level folder %q is not in the layers %v", pkg, top(pkg), layers)
			continue
		}
		for _, dep := range deps {
			if r := slices.Index(layers, top(dep)); r > rank {
				t.Errorf("%s imports %s: %s is above %s", pkg, dep, top(dep), top(pkg))
			}
		}
	}
}
