package lookup

import "encoding/json"

// The registrar's records on disk. They keep their own JSON names, apart
// from the domain types and from the API's (apitypes): renaming a field
// of either changes nothing here.

type attributeRecord struct {
	Type       string         `json:"type"`
	Supertypes []string       `json:"supertypes,omitempty"`
	Fields     map[string]any `json:"fields"`
	Java       *JavaEntry     `json:"java,omitempty"`
}

type itemFields struct {
	ServiceID  string            `json:"serviceID"`
	Types      []string          `json:"types"`
	Attributes []attributeRecord `json:"attributes"`
	Endpoint   string            `json:"endpoint,omitempty"`
	Service    json.RawMessage   `json:"service,omitempty"`
	Java       *JavaItem         `json:"java,omitempty"`
}

type templateRecord struct {
	ServiceID  string            `json:"serviceID,omitempty"`
	Types      []string          `json:"types,omitempty"`
	Attributes []attributeRecord `json:"attributes,omitempty"`
}

// itemRecord is a registration as stored.
type itemRecord struct {
	Item  itemFields `json:"item"`
	Lease string     `json:"lease"`
	Owner string     `json:"owner,omitempty"`
}

// notifyRecord is a notify registration as stored.
type notifyRecord struct {
	ID          string         `json:"id"`
	EventID     int64          `json:"eventID"`
	Seq         int64          `json:"seq"`
	Template    templateRecord `json:"template"`
	Transitions []string       `json:"transitions"`
	Listener    string         `json:"listener"`
	Handback    []byte         `json:"handback"`
	Lease       string         `json:"lease"`
	// HostLocal: the host's administrator named the listener (it may
	// be on this host: outbound.WithHostLocal).
	HostLocal bool `json:"hostLocal,omitempty"`
	// From: a notifier's registration's revision (storedNotify.From).
	From int64 `json:"from,omitempty"`
}

func attributeRecords(as []Attribute) []attributeRecord {
	if as == nil {
		return nil
	}
	out := make([]attributeRecord, len(as))
	for i, a := range as {
		out[i] = attributeRecord(a)
	}
	return out
}

func attributesOf(rs []attributeRecord) []Attribute {
	if rs == nil {
		return nil
	}
	out := make([]Attribute, len(rs))
	for i, r := range rs {
		out[i] = Attribute(r)
	}
	return out
}

func recordOf(si *storedItem) itemRecord {
	it := si.Item
	return itemRecord{Lease: si.Lease, Owner: si.Owner, Item: itemFields{ServiceID: it.ServiceID, Types: it.Types,
		Attributes: attributeRecords(it.Attributes), Endpoint: it.Endpoint, Service: it.Service, Java: it.Java}}
}

func (r itemRecord) stored() storedItem {
	it := r.Item
	return storedItem{Lease: r.Lease, Owner: r.Owner, Item: Item{ServiceID: it.ServiceID, Types: it.Types,
		Attributes: attributesOf(it.Attributes), Endpoint: it.Endpoint, Service: it.Service, Java: it.Java}}
}

func notifyRecordOf(n *storedNotify) notifyRecord {
	t := n.Template
	return notifyRecord{ID: n.ID, EventID: n.EventID, Seq: n.Seq, Transitions: n.Transitions, Listener: n.Listener,
		Handback: n.Handback, Lease: n.Lease, HostLocal: n.HostLocal, From: n.From,
		Template: templateRecord{ServiceID: t.ServiceID, Types: t.Types, Attributes: attributeRecords(t.Attributes)}}
}

func (r notifyRecord) stored() storedNotify {
	t := r.Template
	return storedNotify{ID: r.ID, EventID: r.EventID, Seq: r.Seq, Transitions: r.Transitions, Listener: r.Listener,
		Handback: r.Handback, Lease: r.Lease, HostLocal: r.HostLocal, From: r.From,
		Template: Template{ServiceID: t.ServiceID, Types: t.Types, Attributes: attributesOf(t.Attributes)}}
}
