package main

import (
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/paths"
	"github.com/jinid/jinid/services/api/client"
)

// defaultServer is the network API a client command uses when no socket
// is there and nothing else is said.
const defaultServer = "http://127.0.0.1:4162"

// apiFlags say how a client command reaches a jinid: the local socket by
// default (no token: file permissions decide), else the network API with
// a token.
type apiFlags struct {
	server, tokenFile, ca string
}

// bind defines the flags on pf.
func (f *apiFlags) bind(pf *pflag.FlagSet) {
	pf.StringVar(&f.server, "server", "", `the jinid API: http(s)://host:port or unix:///path (default: $JINID_SERVER, else the daemon's socket — $JINID_API_SOCKET, as the daemon reads it, or `+
		paths.DefaultSocket()+` — when it is there, else `+defaultServer+`)`)
	pf.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token for a network API (without it, $JINID_TOKEN holds the token itself: its secret, not a file name)")
	pf.StringVar(&f.ca, "ca", "", "PEM file of the certificate authority an https API's certificate is checked against (default: the system's)")
}

// target is the API the flags name.
func (f *apiFlags) target() string {
	switch {
	case f.server != "":
		return f.server
	case os.Getenv("JINID_SERVER") != "":
		return os.Getenv("JINID_SERVER")
	}
	for _, p := range sockets() {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return "unix://" + p
		}
	}
	return defaultServer
}

// sockets are where a client looks for the daemon's socket, in order:
// $JINID_API_SOCKET (the daemon's own setting, in an environment the
// administrator shares with it), then the default.
func sockets() []string {
	var out []string
	if p := os.Getenv("JINID_API_SOCKET"); p != "" && p != "none" {
		out = append(out, p)
	}
	if d := paths.DefaultSocket(); !slices.Contains(out, d) {
		out = append(out, d)
	}
	return out
}

// connect returns a client of the API the flags name.
func (f *apiFlags) connect() (*client.Client, error) {
	target := f.target()
	var opts []client.Option
	if !strings.HasPrefix(target, "unix:") {
		token := os.Getenv("JINID_TOKEN")
		if f.tokenFile != "" {
			raw, err := os.ReadFile(f.tokenFile)
			if err != nil {
				return nil, usagef("--token-file: %w", err)
			}
			token = strings.TrimSpace(string(raw))
			if token == "" {
				return nil, usagef("--token-file %s is empty", f.tokenFile)
			}
		}
		if token != "" {
			opts = append(opts, client.WithToken(token))
		}
	}
	hc, err := apiHTTP(target, f.ca)
	if err != nil {
		return nil, err
	}
	c, err := client.New(target, hc, opts...)
	if err != nil {
		return nil, usageError{err: err} // --server's or $JINID_SERVER's value
	}
	return c, nil
}
