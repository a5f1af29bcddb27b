package inspect

import (
	"net"
	"strconv"
	"time"

	"github.com/jinid/jinid/discovery"
)

// FieldNames are the fields of a record that -T fields prints and -Y
// filters on, in the order --help lists them.
var FieldNames = []string{
	"frame", "time", "relative", "transport", "source", "destination", "kind", "version", "length",
	"serviceID", "host", "port", "lookup", "group", "requester", "method", "status", "error",
}

// fieldDocs says what each field is, for --help.
var fieldDocs = map[string]string{
	"frame":       "the number of the packet the message begins in",
	"time":        "its time, RFC 3339, UTC",
	"relative":    "seconds since the first packet",
	"transport":   "udp or tcp",
	"source":      "host:port it came from",
	"destination": "host:port it went to",
	"kind":        "multicast-request, multicast-announcement, unicast-request, unicast-response, jeri-call or unknown",
	"version":     "the discovery protocol version (1 or 2)",
	"length":      "bytes of the message",
	"serviceID":   "the lookup service's ServiceID (announcements, responses) or the ones a request knows",
	"host":        "the host an announcement or response names, or a request's reply host",
	"port":        "its port",
	"lookup":      "an announcement's or response's lookup service, host:port",
	"group":       `the groups it names, one value each ("" the public group)`,
	"requester":   "a multicast request's reply-to host:port",
	"method":      "a Jini ERI call's method (Registrar.lookup/2)",
	"status":      "how a Jini ERI call ended: return, throw, no-such-object, unanswered",
	"error":       "why the message did not decode",
}

// FieldDoc is a field's description.
func FieldDoc(name string) string { return fieldDocs[name] }

// Values returns a record's values of a field (none when it has none;
// several for groups and a request's known ServiceIDs).
func Values(r Record, name string) []string {
	one := func(s string) []string {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	num := func(n int) []string {
		if n == 0 {
			return nil
		}
		return []string{strconv.Itoa(n)}
	}
	switch name {
	case "frame":
		return num(r.Frame)
	case "time":
		return []string{r.Time.UTC().Format(time.RFC3339Nano)}
	case "relative":
		return []string{strconv.FormatFloat(r.Relative, 'f', 6, 64)}
	case "transport":
		return one(r.Transport)
	case "source":
		return one(r.Source)
	case "destination":
		return one(r.Destination)
	case "kind":
		return one(r.Kind)
	case "version":
		return num(r.Version)
	case "length":
		return []string{strconv.Itoa(r.Length)}
	case "error":
		return one(r.Error)
	}
	// What a message says of a lookup service or a requester: its
	// ServiceIDs, host, port and groups.
	var (
		ids, groups     []string
		host            string
		port            int
		lookup, request bool
	)
	switch f := r.Fields.(type) {
	case *AnnouncementFields:
		ids, host, port, groups, lookup = one(f.ServiceID), f.Host, f.Port, f.Groups, true
	case *UnicastResponseFields:
		ids, host, port, groups, lookup = one(f.Registrar.ServiceID), f.Host, f.Port, f.Groups, true
	case *RequestFields:
		ids, host, port, groups, request = f.KnownServiceIDs, f.Host, f.Port, f.Groups, true
	case *JERICallFields:
		switch name {
		case "method":
			return one(f.Method)
		case "status":
			return one(f.Status)
		}
		return nil
	}
	switch name {
	case "serviceID":
		return ids
	case "host":
		return one(host)
	case "port":
		return num(port)
	case "group":
		return groups
	case "lookup":
		if lookup {
			return one(discovery.HostPort(host, port))
		}
	case "requester":
		if request {
			return one(net.JoinHostPort(host, strconv.Itoa(port)))
		}
	}
	return nil
}

// IsField reports whether name is a field.
func IsField(name string) bool { _, ok := fieldDocs[name]; return ok }
