package mcast

import (
	"errors"

	"github.com/jinid/jinid/discovery"
)

// Inbound decodes the datagrams a transport receives and hands on the
// announcements and requests among them. Anything else is counted by
// reason and dropped: a flood of garbage costs a decode attempt per
// datagram and nothing more.
type Inbound struct {
	// OnAnnouncement and OnRequest receive decoded messages; either may
	// be nil to ignore that kind.
	OnAnnouncement func(discovery.Announcement, Packet)
	OnRequest      func(discovery.Request, Packet)
	Metrics        *Metrics
}

// Handle is a transport Handler.
func (in *Inbound) Handle(p Packet) {
	v, err := discovery.PacketVersion(p.Data)
	if err != nil {
		in.Metrics.countRejected(p.IfName, "malformed")
		return
	}
	isRequest := false
	switch v {
	case discovery.ProtocolV2:
		if isRequest, err = discovery.IsRequest(p.Data); err != nil {
			in.Metrics.countRejected(p.IfName, "malformed")
			return
		}
	case discovery.ProtocolV1:
		// Version 1 packets do not say what they are; the group does.
		switch p.Dst {
		case discovery.RequestGroupV4, discovery.RequestGroupV6:
			isRequest = true
		case discovery.AnnouncementGroupV4, discovery.AnnouncementGroupV6:
		default:
			in.Metrics.countRejected(p.IfName, "not_to_a_group")
			return
		}
	default:
		in.Metrics.countRejected(p.IfName, "version")
		return
	}
	if isRequest {
		r, err := discovery.DecodeRequest(p.Data)
		if err != nil {
			in.Metrics.countRejected(p.IfName, reason(err))
			return
		}
		if r.Version == discovery.ProtocolV1 {
			r.Host = p.Src.Addr().String()
		}
		in.Metrics.countMessage(p.IfName, "request", r.Version)
		if in.OnRequest != nil {
			in.OnRequest(r, p)
		}
		return
	}
	a, err := discovery.DecodeAnnouncement(p.Data)
	if err != nil {
		in.Metrics.countRejected(p.IfName, reason(err))
		return
	}
	in.Metrics.countMessage(p.IfName, "announcement", a.Version)
	if in.OnAnnouncement != nil {
		in.OnAnnouncement(a, p)
	}
}

func reason(err error) string {
	var fe *discovery.FormatError
	switch {
	case errors.As(err, &fe):
		return "format"
	case errors.Is(err, discovery.ErrVersion):
		return "version"
	default:
		return "malformed"
	}
}
