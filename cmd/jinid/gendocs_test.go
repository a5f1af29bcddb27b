//go:build !jinid_omit_tools

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"
)

// The packages' man pages and shell completions are made from the
// command tree, here, where the man page writer (cobra/doc) is linked
// into no binary: scripts/package runs
//
//	JINID_GEN_DOCS=DIR go test -run '^TestGenDocs$' ./cmd/jinid
//
// to write DIR/man1 and DIR/completions. Without JINID_GEN_DOCS it
// writes them to a temporary directory and checks that every command
// has its page.
func TestGenDocs(t *testing.T) {
	dir := os.Getenv("JINID_GEN_DOCS")
	if dir == "" {
		dir = t.TempDir()
	}
	root := newRootCmd(io.Discard, io.Discard)
	root.DisableAutoGenTag = true // the same pages from the same tree
	man, comp := filepath.Join(dir, "man1"), filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hdr := &doc.GenManHeader{Title: "JINID", Section: "1", Source: "jinid", Manual: "jinid manual"}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		t.Fatalf("man pages: %v", err)
	}
	for name, gen := range map[string]func(string) error{
		"jinid.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_jinid":     root.GenZshCompletionFile,
		"jinid.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
	} {
		if err := gen(filepath.Join(comp, name)); err != nil {
			t.Fatalf("completion %s: %v", name, err)
		}
	}
	var g globalFlags
	all := map[string]*spec{}
	leafCommands(rootSpec(&g), nil, all)
	for path := range all {
		page := filepath.Join(man, "jinid-"+strings.ReplaceAll(path, " ", "-")+".1")
		if _, err := os.Stat(page); err != nil {
			t.Errorf("no man page for jinid %s: %v", path, err)
		}
	}
}
