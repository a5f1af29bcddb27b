package main

import "strings"

// rootShort is jinid's one-line description.
const rootShort = "A Jini discovery appliance"

// rootSpec is jinid, with the commands of this build.
func rootSpec(g *globalFlags) *spec {
	return &spec{use: "jinid", short: rootShort, long: rootLong(), subs: commands(g)}
}

// rootIntro opens jinid's own help.
const rootIntro = `jinid brings the Jini discovery world to LAN gateways, boards and servers.

It speaks the Jini discovery protocols (versions 1 and 2) with Java (Apache
River) lookup services and clients, and lets you look at discovery traffic
packet by packet.

Start with:
`

// firstSteps are the root help's first commands, the second word of
// each line the command it needs.
const firstSteps = `  jinid daemon                       run the appliance (API on :4162)
  jinid discover                     find the lookup services on the LAN
  jinid lookup register|query|list   use the lookup service of a running jinid
  jinid inspect --pcap capture.pcap  decode the discovery packets of a capture
  jinid config check|print           validate the config file / show the effective settings
  jinid snapshot                     write a snapshot of the store now (with --snapshot-dir)
  jinid version                      show what build this is
`

// The commands of the two halves a router's build splits jinid into
// (the tools and the daemon features, internal/features), and the
// binary each half is in there.
func toolNames() []string {
	return []string{"inspect", "discover", "lookup", "lease", "lds", "listen", "renewal", "mailbox", "token", "txn"}
}

func daemonNames() []string { return []string{"daemon", "config", "snapshot"} }

const (
	toolsBinary  = "the tools binary (jinid-tools; /usr/bin/jinid in the OpenWrt package)"
	daemonBinary = "the daemon binary (jinid-daemon)"
)

// elsewhere names the commands this build leaves out, and where they
// are.
func elsewhere() map[string]string {
	if hasTools && hasDaemon {
		return nil // and the build has none of what follows
	}
	out := map[string]string{}
	if !hasTools {
		for _, name := range toolNames() {
			out[name] = toolsBinary
		}
	}
	if !hasDaemon {
		for _, name := range daemonNames() {
			out[name] = daemonBinary
		}
	}
	return out
}

// rootLong is jinid's own help: the first commands this build has, and
// where the others are.
func rootLong() string {
	if hasTools && hasDaemon {
		return rootIntro + strings.TrimSuffix(firstSteps, "\n")
	}
	var b strings.Builder
	b.WriteString(rootIntro)
	away := elsewhere()
	for _, line := range strings.SplitAfter(firstSteps, "\n") {
		if f := strings.Fields(line); len(f) > 1 && away[f[1]] == "" {
			b.WriteString(line)
		}
	}
	if !hasTools {
		b.WriteString("\nThis is the router's daemon binary; discovery, inspection and the API\nclients are in the tools binary, jinid-tools.\n")
	}
	if !hasDaemon {
		b.WriteString("\nThis is the router's tools binary; the daemon is in jinid-daemon.\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// notHere is the usage error for a command of the other binary.
func notHere(name, where string) error {
	return usagef("%q is not in this build of jinid: it is in %s", name, where)
}
