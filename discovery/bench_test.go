package discovery

import (
	"testing"

	"github.com/jinid/jinid/internal/rig/vectors"
)

func benchDecode(b *testing.B, name string) {
	pkt := vectors.Named(name).Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if _, err := DecodeAnnouncement(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDecodeInto reuses one Announcement, as a receive loop does: the
// only allocation left is the one string all returned strings share.
func benchDecodeInto(b *testing.B, name string) {
	pkt := vectors.Named(name).Bytes()
	var a Announcement
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := a.UnmarshalBinary(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAnnouncementV1(b *testing.B)     { benchDecode(b, "v1.announcement#0") }
func BenchmarkDecodeAnnouncementV2(b *testing.B)     { benchDecode(b, "v2.announcement#0") }
func BenchmarkDecodeAnnouncementV1Into(b *testing.B) { benchDecodeInto(b, "v1.announcement#0") }
func BenchmarkDecodeAnnouncementV2Into(b *testing.B) { benchDecodeInto(b, "v2.announcement#0") }

func BenchmarkDecodeRequestV2(b *testing.B) {
	pkt := vectors.Named("v2.request#0").Bytes()
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if err := r.UnmarshalBinary(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncode(b *testing.B, name string) {
	a, err := DecodeAnnouncement(vectors.Named(name).Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Encode(DefaultMaxPacketSize); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeAnnouncementV1(b *testing.B) { benchEncode(b, "v1.announcement#0") }
func BenchmarkEncodeAnnouncementV2(b *testing.B) { benchEncode(b, "v2.announcement#0") }

// The 60-group announcement that splits over three packets.
func BenchmarkEncodeAnnouncementV2Split(b *testing.B) {
	a := Announcement{Version: 2, Sequence: 43, Host: "lookup.example.org", Port: 4160, Groups: splitGroups()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Encode(DefaultMaxPacketSize); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequestV2(b *testing.B) {
	r, err := DecodeRequest(vectors.Named("v2.request#0").Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Encode(DefaultMaxPacketSize); err != nil {
			b.Fatal(err)
		}
	}
}
