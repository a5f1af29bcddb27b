package inspect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// CaptureWriter saves a live capture's frames: as pcap for one
// interface, as pcapng (one interface block each, named) for several,
// chosen by the file's extension; with a ring, in files of at most
// RingBytes, keeping the last RingFiles (a long capture on a router's
// small flash).
type CaptureWriter struct {
	cfg   WriterConfig
	links []layers.LinkType
	ng    bool

	n       int // the number of the file open, from 1
	f       *os.File
	bw      *bufio.Writer
	written int64
	pcap    *pcapgo.Writer
	ngw     *pcapgo.NgWriter
}

// WriterConfig says where and how a capture is saved.
type WriterConfig struct {
	// Path is the file; with a ring, files are named after it with a
	// number before the extension (jini_00001.pcapng).
	Path string
	// Interfaces are the capture's (LiveConfig.Interfaces).
	Interfaces []string
	// RingFiles, if above 0, keeps that many files of RingBytes each.
	RingFiles int
	RingBytes int64
}

// NewCaptureWriter creates the (first) file.
func NewCaptureWriter(cfg WriterConfig) (*CaptureWriter, error) {
	w := &CaptureWriter{cfg: cfg, ng: strings.EqualFold(filepath.Ext(cfg.Path), ".pcapng")}
	for _, name := range cfg.Interfaces {
		l := layers.LinkTypeEthernet
		if name == "any" {
			l = layers.LinkTypeLinuxSLL
		}
		w.links = append(w.links, l)
	}
	if len(w.links) > 1 && !w.ng {
		return nil, fmt.Errorf("%s: a pcap file holds one interface's frames; name a .pcapng file to save several", cfg.Path)
	}
	if cfg.RingFiles > 0 && cfg.RingBytes <= 0 {
		return nil, errors.New("a ring of files needs their size")
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// name is the path of file n.
func (w *CaptureWriter) name(n int) string {
	if w.cfg.RingFiles <= 0 {
		return w.cfg.Path
	}
	ext := filepath.Ext(w.cfg.Path)
	return fmt.Sprintf("%s_%05d%s", strings.TrimSuffix(w.cfg.Path, ext), n, ext)
}

func (w *CaptureWriter) open() error {
	w.n++
	f, err := os.Create(w.name(w.n))
	if err != nil {
		return fmt.Errorf("creating %s: %w", w.name(w.n), err)
	}
	w.f, w.bw, w.written = f, bufio.NewWriter(f), 0
	cw := &countingWriter{w: w.bw, n: &w.written}
	if w.ng {
		first := pcapgo.NgInterface{Name: w.cfg.Interfaces[0], LinkType: w.links[0], SnapLength: Snaplen}
		ngw, err := pcapgo.NewNgWriterInterface(cw, first, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "jinid inspect"}})
		if err != nil {
			return fmt.Errorf("writing %s: %w", w.name(w.n), err)
		}
		for i := 1; i < len(w.links); i++ {
			if _, err := ngw.AddInterface(pcapgo.NgInterface{Name: w.cfg.Interfaces[i], LinkType: w.links[i], SnapLength: Snaplen}); err != nil {
				return fmt.Errorf("writing %s: %w", w.name(w.n), err)
			}
		}
		w.ngw = ngw
	} else {
		w.pcap = pcapgo.NewWriter(cw)
		if err := w.pcap.WriteFileHeader(Snaplen, w.links[0]); err != nil {
			return fmt.Errorf("writing %s: %w", w.name(w.n), err)
		}
	}
	if w.cfg.RingFiles > 0 && w.n > w.cfg.RingFiles {
		os.Remove(w.name(w.n - w.cfg.RingFiles))
	}
	return nil
}

func (w *CaptureWriter) closeFile() error {
	if w.ngw != nil {
		w.ngw.Flush()
		w.ngw = nil
	}
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFrame writes a frame of interface i (its place in Interfaces).
func (w *CaptureWriter) WriteFrame(i int, ci gopacket.CaptureInfo, data []byte) error {
	if w.cfg.RingFiles > 0 && w.written >= w.cfg.RingBytes {
		if err := w.closeFile(); err != nil {
			return err
		}
		if err := w.open(); err != nil {
			return err
		}
	}
	ci.InterfaceIndex = i
	if w.ngw != nil {
		return w.ngw.WritePacket(ci, data)
	}
	return w.pcap.WritePacket(ci, data)
}

// Close finishes the file open.
func (w *CaptureWriter) Close() error { return w.closeFile() }

type countingWriter struct {
	w io.Writer
	n *int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	*c.n += int64(n)
	return n, err
}
