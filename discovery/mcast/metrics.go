package mcast

import (
	"net/netip"
	"strconv"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/metrics"
)

// Metrics counts the discovery port's traffic. A nil *Metrics counts
// nothing.
type Metrics struct {
	received   *metrics.Counter
	sent       *metrics.Counter
	sendErrors *metrics.Counter
	dropped    *metrics.Counter
	joined     *metrics.Gauge
	messages   *metrics.Counter
	rejected   *metrics.Counter
}

// NewMetrics registers the discovery port's metrics with reg.
func NewMetrics(reg *metrics.Registry) *Metrics {
	return &Metrics{
		received: reg.Counter("jinid_discovery_packets_received_total",
			"Datagrams received on the multicast discovery port, by interface and address family.", "interface", "family"),
		sent: reg.Counter("jinid_discovery_packets_sent_total",
			"Multicast discovery datagrams sent, by interface, address family, kind (announcement, request) and protocol version.",
			"interface", "family", "kind", "version"),
		sendErrors: reg.Counter("jinid_discovery_send_errors_total",
			"Multicast discovery datagrams that could not be sent, by interface and address family.", "interface", "family"),
		dropped: reg.Counter("jinid_discovery_packets_dropped_total",
			"Datagrams dropped before decoding, by interface and reason (oversized, read_error).", "interface", "reason"),
		joined: reg.Gauge("jinid_discovery_interfaces_joined",
			"Interfaces on which the discovery groups are joined, by address family.", "family"),
		messages: reg.Counter("jinid_discovery_messages_received_total",
			"Multicast discovery messages decoded, by interface, kind (request, announcement) and protocol version.",
			"interface", "kind", "version"),
		rejected: reg.Counter("jinid_discovery_messages_rejected_total",
			"Datagrams on the discovery port that were not discovery messages, by interface and reason (malformed, version, format, not_to_a_group).",
			"interface", "reason"),
	}
}

func fam(f int) string { return "ipv" + strconv.Itoa(f) }

func (m *Metrics) countReceived(ifc string, f int) {
	if m != nil {
		m.received.Inc(ifc, fam(f))
	}
}

// countSent counts a datagram sent to a group, labelled with what it
// is.
func (m *Metrics) countSent(ifc string, f int, data []byte, group netip.Addr) {
	if m == nil {
		return
	}
	kind, version := "other", "unknown"
	if v, err := discovery.PacketVersion(data); err == nil && (v == discovery.ProtocolV1 || v == discovery.ProtocolV2) {
		version = strconv.Itoa(v)
		switch group {
		case discovery.RequestGroupV4, discovery.RequestGroupV6:
			kind = "request"
		case discovery.AnnouncementGroupV4, discovery.AnnouncementGroupV6:
			kind = "announcement"
		}
	}
	m.sent.Inc(ifc, fam(f), kind, version)
}

func (m *Metrics) countSendError(ifc string, f int) {
	if m != nil {
		m.sendErrors.Inc(ifc, fam(f))
	}
}

func (m *Metrics) countDropped(ifc, reason string) {
	if m != nil {
		m.dropped.Inc(ifc, reason)
	}
}

func (m *Metrics) setJoined(socks map[sockKey]*sock) {
	if m == nil {
		return
	}
	n := map[int]int{4: 0, 6: 0}
	for k := range socks {
		n[k.family]++
	}
	for f, c := range n {
		m.joined.Set(float64(c), fam(f))
	}
}

func (m *Metrics) countMessage(ifc, kind string, version int) {
	if m != nil {
		m.messages.Inc(ifc, kind, strconv.Itoa(version))
	}
}

func (m *Metrics) countRejected(ifc, reason string) {
	if m != nil {
		m.rejected.Inc(ifc, reason)
	}
}
