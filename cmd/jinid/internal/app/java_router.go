//go:build jinid_router

package app

import "context"

// Java tells whether this build serves Java clients: the router build
// does not (the registrar proxy, Jini ERI and Java serialization would
// put a mips daemon over its size budget, docs/performance.md).
const Java = false

// buildJava says once that Java clients are not served.
func (d *Daemon) buildJava(context.Context) error {
	d.log.Info("Java clients are not served: the router build has no Jini ERI (use the full build for them)")
	return nil
}
