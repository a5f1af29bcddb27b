package main

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

// The root help's first commands: the daemon's, the tools', and one of
// both. A build lists those of the halves it has (and links no other:
// hasDaemon and hasTools are constants).
const (
	daemonSteps = `  jinid daemon                       run the appliance (API on :4162)
  jinid config check|print           validate the config file / show the effective settings
  jinid snapshot                     write a snapshot of the store now (with --snapshot-dir)
`
	toolSteps = `  jinid discover                     find the lookup services on the LAN
  jinid browse                       list every service they hold, Java and jinid
  jinid lookup register|query|list   use the lookup service of a running jinid
  jinid inspect --pcap capture.pcap  decode the discovery packets of a capture
`
	versionStep = `  jinid version                      show what build this is`
)

// The commands of the two halves a router's build splits jinid into
// (the tools and the daemon features, internal/features), and the
// binary each half is in there.
func toolNames() []string {
	return []string{"inspect", "discover", "browse", "lookup", "lease", "lds", "listen", "renewal", "mailbox", "token", "txn"}
}

func daemonNames() []string { return []string{"daemon", "config", "snapshot", "store", "cluster"} }

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
	steps, note := "", ""
	if hasDaemon {
		steps += daemonSteps
	} else {
		note = "\n\nThis is the router's tools binary; the daemon is in jinid-daemon."
	}
	if hasTools {
		steps += toolSteps
	} else {
		note = "\n\nThis is the router's daemon binary; discovery, inspection and the API\nclients are in the tools binary, jinid-tools."
	}
	return rootIntro + steps + versionStep + note
}

// notHere is the usage error for a command of the other binary.
func notHere(name, where string) error {
	return usagef("%q is not in this build of jinid: it is in %s", name, where)
}
