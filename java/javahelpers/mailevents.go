package javahelpers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/mailbox"
)

// javaEventJSON is a Java event as the mailbox stores it: what an HTTP
// client pulls (source, eventID, seqNum, handback: the fields every
// event has), with the event's class and its object stream, which a Java
// client gets back whole.
type javaEventJSON struct {
	Source   javaSource `json:"source"`
	EventID  int64      `json:"eventID"`
	SeqNum   int64      `json:"seqNum"`
	Handback []byte     `json:"handback,omitempty"`
	Type     string     `json:"type"`
	Class    string     `json:"class"`
	Java     []byte     `json:"java"`
}

// javaEventType is the type of the Java events a mailbox stores.
const javaEventType = "java"

// javaSource names a Java event's source for HTTP clients and for the
// unknown-event list: a name (a String source's text, else its class),
// and a digest of its object stream, which tells equal sources from
// others as Java's equals would for the sources generators use.
type javaSource struct {
	Java   string `json:"java"`
	Digest string `json:"digest"`
}

// maxSourceName bounds what of a String source names it.
const maxSourceName = 200

func (s *face) source(v javaio.Value) (javaSource, error) {
	b, err := javaio.Encode(v, false)
	if err != nil {
		return javaSource{}, err
	}
	sum := sha256.Sum256(b)
	name := reggie.Describe(v)
	if str, ok := v.(string); ok {
		name = strings.ToValidUTF8(str[:min(len(str), maxSourceName)], "?")
	}
	return javaSource{Java: name, Digest: hex.EncodeToString(sum[:16])}, nil
}

// key is the unknown-event key of a Java event: its source and event ID.
func (s *face) key(ev *javaio.Object) (mailbox.Key, error) {
	src, err := s.source(reggie.Field(ev, "source"))
	if err != nil {
		return mailbox.Key{}, err
	}
	b, err := json.Marshal(src)
	if err != nil {
		return mailbox.Key{}, err
	}
	id, _ := reggie.Field(ev, "eventID").(int64)
	return mailbox.Key{Source: b, EventID: id}, nil
}

// eventJSON is a Java event as the mailbox stores it.
func (s *face) eventJSON(ev *javaio.Object) ([]byte, error) {
	src, err := s.source(reggie.Field(ev, "source"))
	if err != nil {
		return nil, err
	}
	out := javaEventJSON{Source: src, Type: javaEventType, Class: ev.Class.Name}
	out.EventID, _ = reggie.Field(ev, "eventID").(int64)
	out.SeqNum, _ = reggie.Field(ev, "seqNum").(int64)
	if hb := reggie.Field(ev, "handback"); hb != nil {
		if out.Handback, err = javaio.Encode(hb, false); err != nil {
			return nil, err
		}
	}
	if out.Java, err = javaio.Encode(ev, false); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// javaEvent is a stored event as Java gets it: a Java event's own
// object, or for one an HTTP generator sent a plain RemoteEvent (its
// source the source's JSON as a String, its handback the one given when
// it is a Java MarshalledObject).
func (s *face) javaEvent(body []byte) (*javaio.Object, error) {
	var ev struct {
		Source   json.RawMessage `json:"source"`
		EventID  int64           `json:"eventID"`
		SeqNum   int64           `json:"seqNum"`
		Handback []byte          `json:"handback"`
		Java     []byte          `json:"java"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, err
	}
	if ev.Java != nil {
		v, err := javaio.Decode(ev.Java)
		if err != nil {
			return nil, err
		}
		o, ok := v.(*javaio.Object)
		if !ok {
			return nil, errors.New("a stored Java event is not an object")
		}
		return o, nil
	}
	o := javaio.NewObject(s.l.Classes.Class("net.jini.core.event.RemoteEvent")).
		Set("source", string(ev.Source)).Set("eventID", ev.EventID).Set("seqNum", ev.SeqNum)
	if mo, mi, err := s.l.Handback(ev.Handback); err == nil && mo != nil {
		o.Set("handback", mo).Set("miHandback", mi)
	}
	return o, nil
}
