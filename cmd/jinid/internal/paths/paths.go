// Package paths says where jinid keeps its state and its socket unless
// told otherwise: shared by the daemon and the client commands, which
// find the daemon's socket there (and link nothing of the daemon).
package paths

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is where state lives unless told otherwise: the system
// place for a daemon run as root, the user's state directory otherwise.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/jinid"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "jinid")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "jinid")
	}
	return "jinid-data"
}

// DefaultSocket is where the API's unix socket goes unless told
// otherwise: the system's runtime directory for a daemon run as root,
// the user's otherwise (the CLI looks there first).
func DefaultSocket() string {
	if os.Geteuid() == 0 {
		return "/run/jinid/jinid.sock"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "jinid", "jinid.sock")
	}
	return filepath.Join(DefaultDataDir(), "jinid.sock")
}

// SocketInDataDir says the default socket is in the default data
// directory: a user's daemon with no $XDG_RUNTIME_DIR. Given another data
// directory, the daemon puts its socket there.
func SocketInDataDir() bool {
	return os.Geteuid() != 0 && os.Getenv("XDG_RUNTIME_DIR") == ""
}
