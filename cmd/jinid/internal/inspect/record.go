// Package inspect decodes Jini discovery traffic from captured packets:
// multicast requests and announcements (UDP) and unicast discovery
// exchanges (TCP, reassembled per connection), for people reading a
// capture or watching an interface.
package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/printable"
)

// Kinds of record.
const (
	KindMulticastRequest      = "multicast-request"
	KindMulticastAnnouncement = "multicast-announcement"
	KindUnicastRequest        = "unicast-request"
	KindUnicastResponse       = "unicast-response"
	// KindUnknown is traffic on a discovery port that could not be told
	// apart as any of the above.
	KindUnknown = "unknown"
)

// Record is one decoded discovery message, or one that failed to decode.
type Record struct {
	// Frame is the number of the packet the message begins in, from 1
	// (its first byte's, for a TCP message).
	Frame int       `json:"frame"`
	Time  time.Time `json:"time"`
	// Relative is the seconds since the first packet of the capture.
	Relative    float64 `json:"relative"`
	Source      string  `json:"source"`
	Destination string  `json:"destination"`
	Transport   string  `json:"transport"` // "udp" or "tcp"
	Kind        string  `json:"kind"`
	Version     int     `json:"protocolVersion,omitempty"`
	FormatID    string  `json:"formatID,omitempty"`
	Length      int     `json:"length"`
	// Fields is one of the *Fields types, by Kind; nil when decoding
	// failed.
	Fields any    `json:"fields,omitempty"`
	Error  string `json:"error,omitempty"`
}

// AnnouncementFields are the decoded fields of a multicast announcement.
type AnnouncementFields struct {
	Host      string   `json:"host"`
	Port      int      `json:"port"`
	ServiceID string   `json:"serviceID"`
	Groups    []string `json:"groups"`
	Sequence  *int64   `json:"sequence"` // null in protocol version 1
}

// RequestFields are the decoded fields of a multicast request. Host is the
// datagram's source address in protocol version 1, which does not carry
// one.
type RequestFields struct {
	Host            string   `json:"host"`
	Port            int      `json:"port"`
	Groups          []string `json:"groups"` // empty: any group
	KnownServiceIDs []string `json:"knownServiceIDs"`
}

// UnicastRequestFields are the decoded fields of a unicast request.
type UnicastRequestFields struct {
	ProposedFormats []string `json:"proposedFormats,omitempty"`
}

// UnicastResponseFields are the decoded fields of a unicast response.
// Host and Port are the lookup service's: in protocol version 1, which
// does not carry them, the responding peer's address, and its port when
// the client connected to it; when the lookup service connected back to a
// multicast requester, its port is the one its announcements gave, or 0
// (not known) when the capture has none.
type UnicastResponseFields struct {
	Host      string         `json:"host"`
	Port      int            `json:"port"`
	Groups    []string       `json:"groups"`
	Registrar RegistrarField `json:"registrar"`
}

// RegistrarField says what kind of registrar proxy a response carried.
type RegistrarField struct {
	Kind string `json:"kind"` // "jinid" or "java"
	Size int    `json:"size"` // bytes of the marshalled proxy
	// ServiceID is the one the proxy carries (jinid's and Reggie's do).
	ServiceID string `json:"serviceID,omitempty"`
	APIURL    string `json:"apiURL,omitempty"`
}

// WriteJSON writes r as one line of JSON.
func WriteJSON(w io.Writer, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding record: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// TimeFormat says how WriteText shows a record's time.
type TimeFormat int

// Time formats, as tshark's -t r and -t ad.
const (
	TimeRelative TimeFormat = iota // seconds since the first packet
	TimeAbsolute                   // the date and time, UTC
)

// WriteText writes r as one line for people: its frame, time, transport,
// source and destination, kind, version and decoded fields.
func WriteText(w io.Writer, r Record, tf TimeFormat) error {
	var b strings.Builder
	when := fmt.Sprintf("%11.6f", r.Relative)
	if tf == TimeAbsolute {
		when = r.Time.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	fmt.Fprintf(&b, "%6d %s %s %s > %s %s", r.Frame, when, r.Transport, r.Source, r.Destination, r.Kind)
	if r.Version != 0 {
		fmt.Fprintf(&b, " v%d", r.Version)
	}
	switch f := r.Fields.(type) {
	case *AnnouncementFields:
		if f.Sequence != nil {
			fmt.Fprintf(&b, " seq=%d", *f.Sequence)
		}
		fmt.Fprintf(&b, " lookup=%s id=%s groups=%s", discovery.HostPort(f.Host, f.Port), f.ServiceID, groupList(f.Groups, "(none)"))
	case *RequestFields:
		fmt.Fprintf(&b, " reply-to=%s groups=%s", discovery.HostPort(f.Host, f.Port), groupList(f.Groups, "(any)"))
		if len(f.KnownServiceIDs) > 0 {
			fmt.Fprintf(&b, " known=%s", strings.Join(f.KnownServiceIDs, ","))
		}
	case *UnicastRequestFields:
		if len(f.ProposedFormats) > 0 {
			fmt.Fprintf(&b, " formats=%s", strings.Join(f.ProposedFormats, ","))
		}
	case *JERICallFields:
		fmt.Fprintf(&b, " session=%d object=%s %s -> %s", f.Session, f.Object, f.Method, f.Status)
		if f.Exception != "" {
			fmt.Fprintf(&b, " %s", f.Exception)
			if f.Message != "" {
				fmt.Fprintf(&b, " %q", f.Message)
			}
		}
	case *UnicastResponseFields:
		fmt.Fprintf(&b, " lookup=%s groups=%s registrar=%s", discovery.HostPort(f.Host, f.Port), groupList(f.Groups, "(none)"), f.Registrar.Kind)
		if f.Registrar.Kind == "jinid" {
			fmt.Fprintf(&b, " id=%s api=%s", f.Registrar.ServiceID, f.Registrar.APIURL)
		} else {
			if f.Registrar.ServiceID != "" {
				fmt.Fprintf(&b, " id=%s", f.Registrar.ServiceID)
			}
			fmt.Fprintf(&b, " proxy=%dB", f.Registrar.Size)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, " error: %s", r.Error)
	}
	// What the packet said (a host, a URL, an exception's message) is
	// shown, never sent to the terminal.
	_, err := io.WriteString(w, printable.String(b.String())+"\n")
	return err
}

// groupList shows groups for people: the public group "" as "(public)",
// and an empty list as empty says (any group in a request, none in an
// announcement).
func groupList(groups []string, empty string) string {
	if len(groups) == 0 {
		return empty
	}
	shown := make([]string, len(groups))
	for i, g := range groups {
		if g == "" {
			shown[i] = "(public)"
		} else {
			shown[i] = fmt.Sprintf("%q", g)
		}
	}
	return "[" + strings.Join(shown, " ") + "]"
}
