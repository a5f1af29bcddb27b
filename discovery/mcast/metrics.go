package mcast

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what a transport does. A nil *Metrics counts nothing.
type Metrics struct {
	received   *prometheus.CounterVec
	sent       *prometheus.CounterVec
	sendErrors *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	joined     *prometheus.GaugeVec
	messages   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
}

// NewMetrics creates the transport's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_multicast_packets_received_total",
			Help: "Datagrams received on the discovery port, by address family.",
		}, []string{"family"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_multicast_packets_sent_total",
			Help: "Discovery datagrams sent, by address family.",
		}, []string{"family"}),
		sendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_multicast_send_errors_total",
			Help: "Discovery datagrams that could not be sent, by address family.",
		}, []string{"family"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_multicast_packets_dropped_total",
			Help: "Datagrams dropped before decoding, by reason (oversized, read_error).",
		}, []string{"reason"}),
		joined: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jinid_multicast_interfaces_joined",
			Help: "Interfaces on which the discovery groups are joined, by address family.",
		}, []string{"family"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_discovery_messages_received_total",
			Help: "Multicast discovery messages decoded, by kind (request, announcement) and protocol version.",
		}, []string{"kind", "version"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jinid_discovery_messages_rejected_total",
			Help: "Datagrams on the discovery port that were not discovery messages, by reason (malformed, version, format, not_to_a_group).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.received, m.sent, m.sendErrors, m.dropped, m.joined, m.messages, m.rejected} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func fam(f int) string { return "ipv" + strconv.Itoa(f) }

func (m *Metrics) countReceived(f int) {
	if m != nil {
		m.received.WithLabelValues(fam(f)).Inc()
	}
}

func (m *Metrics) countSent(f int) {
	if m != nil {
		m.sent.WithLabelValues(fam(f)).Inc()
	}
}

func (m *Metrics) countSendError(f int) {
	if m != nil {
		m.sendErrors.WithLabelValues(fam(f)).Inc()
	}
}

func (m *Metrics) countDropped(reason string) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
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
		m.joined.WithLabelValues(fam(f)).Set(float64(c))
	}
}

func (m *Metrics) countMessage(kind string, version int) {
	if m != nil {
		m.messages.WithLabelValues(kind, strconv.Itoa(version)).Inc()
	}
}

func (m *Metrics) countRejected(reason string) {
	if m != nil {
		m.rejected.WithLabelValues(reason).Inc()
	}
}
