package mcast

import (
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// BenchmarkInbound measures the work per received datagram after the
// socket: classify, decode, count, hand on.
func BenchmarkInbound(b *testing.B) {
	m := NewMetrics(metrics.New())
	in := &Inbound{Metrics: m, OnAnnouncement: func(discovery.Announcement, Packet) {}}
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"announcement-v2", vectors.Named("v2.announcement#0").Bytes()},
		{"announcement-v1", vectors.Named("v1.announcement#0").Bytes()},
		{"malformed", vectors.Named("v2.announcement#0").Bytes()[:40]},
		{"garbage", []byte{0x13, 0x37, 0, 0, 1, 2, 3}},
	} {
		p := Packet{Data: bc.data, Dst: discovery.AnnouncementGroupV4, IfName: "eth0", Family: 4}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in.Handle(p)
			}
		})
	}
}
