package inspect

import (
	"net"
	"strconv"
	"time"
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
	switch f := r.Fields.(type) {
	case *AnnouncementFields:
		switch name {
		case "serviceID":
			return one(f.ServiceID)
		case "host":
			return one(f.Host)
		case "port":
			return num(f.Port)
		case "lookup":
			return one(hostPort(f.Host, f.Port))
		case "group":
			return f.Groups
		}
	case *RequestFields:
		switch name {
		case "serviceID":
			return f.KnownServiceIDs
		case "host":
			return one(f.Host)
		case "port":
			return num(f.Port)
		case "requester":
			return one(net.JoinHostPort(f.Host, strconv.Itoa(f.Port)))
		case "group":
			return f.Groups
		}
	case *UnicastResponseFields:
		switch name {
		case "serviceID":
			return one(f.Registrar.ServiceID)
		case "host":
			return one(f.Host)
		case "port":
			return num(f.Port)
		case "lookup":
			return one(hostPort(f.Host, f.Port))
		case "group":
			return f.Groups
		}
	case *JERICallFields:
		switch name {
		case "method":
			return one(f.Method)
		case "status":
			return one(f.Status)
		}
	}
	return nil
}

// IsField reports whether name is a field.
func IsField(name string) bool { _, ok := fieldDocs[name]; return ok }
