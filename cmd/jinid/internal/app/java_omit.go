//go:build jinid_omit_java

package app

import (
	"context"

	"github.com/jinid/jinid/services/httpjson"
)

// Java tells whether this build serves Java clients: one built without
// the Java feature (jinid_omit_java; the router profile leaves it out:
// the registrar proxy, Jini ERI and Java serialization would put a mips
// daemon over its size budget, docs/performance.md) does not.
const Java = false

// buildJava says once that Java clients are not served.
func (d *Daemon) buildJava(context.Context) error {
	d.log.Info("Java clients are not served: this build has no Jini ERI (the full build has)")
	return nil
}

// javaServices adds nothing to the API: the Java forms of registrations
// are the Java side's.
func (d *Daemon) javaServices(s []httpjson.Service) []httpjson.Service { return s }

// withoutJava has nothing to undo: a build without Java never
// registered jinid's services for Java.
func (d *Daemon) withoutJava() {}
