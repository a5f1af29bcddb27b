package main

import (
	"github.com/spf13/pflag"

	"github.com/jinid/jinid/discovery/mcast"
)

// interfaceFlags puts on f the flags that choose the interfaces
// multicast goes out on: the daemon's and discover's are the same.
func interfaceFlags(f *pflag.FlagSet, include, exclude *[]string, noDefaultRoute *bool) {
	f.StringSliceVar(include, "interfaces", nil, "multicast only on interfaces matching these patterns (e.g. eth*,br-lan; default: all suitable); a name given outright is used even if --exclude-interfaces matches it")
	f.StringSliceVar(exclude, "exclude-interfaces", mcast.DefaultExclude, "never multicast on interfaces matching these patterns")
	f.BoolVar(noDefaultRoute, "exclude-default-route", false, "never multicast on an interface a default route goes out of (a router's WAN, whatever its name) unless --interfaces names it")
}
