package inspect

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dissector is the Wireshark (and tshark) dissector of the Jini
// discovery protocols, in Lua: what jinid decodes, for people who live
// in Wireshark.
//
//go:embed jini.lua
var Dissector []byte

// DissectorDir is the personal Lua plugin folder of Wireshark 3 and 4
// on Linux, under a home directory.
const DissectorDir = ".local/lib/wireshark/plugins"

// InstallDissector writes the dissector into dir (the personal plugin
// folder under the home directory when dir is empty) and returns the
// file's path.
func InstallDissector(dir string) (string, error) {
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding Wireshark's plugin folder: %w", err)
		}
		dir = filepath.Join(home, DissectorDir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, "jini.lua")
	if err := os.WriteFile(path, Dissector, 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, errors.Unwrap(err))
	}
	return path, nil
}
