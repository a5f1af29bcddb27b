package javaio

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is wrapped when a stream would need more bytes than the
// reader's limit allows.
var ErrTooLarge = errors.New("stream exceeds size limit")

// Reader reads DataInput values from a stream. It never reads more than its
// limit, so a hostile peer cannot make it buffer without bound, and every
// error names the value it was reading.
type Reader struct {
	r       io.Reader
	limit   int64
	left    int64
	capture []byte
	// capturing is separate from capture != nil so that a capture of zero
	// bytes still reads as "on".
	capturing bool
	// A byte given back by unread, served before the stream's next.
	unreadB   byte
	hasUnread bool
	scratch   [8]byte
}

// NewReader returns a Reader that reads at most limit bytes from r.
func NewReader(r io.Reader, limit int64) *Reader {
	return &Reader{r: r, limit: limit, left: limit}
}

// Consumed reports how many bytes have been read so far.
func (r *Reader) Consumed() int64 { return r.limit - r.avail() }

// Read implements io.Reader within the limit.
func (r *Reader) Read(p []byte) (int, error) {
	if r.hasUnread && len(p) > 0 {
		// Already counted and captured when first read.
		p[0], r.hasUnread = r.unreadB, false
		return 1, nil
	}
	if r.left <= 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.limit)
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.r.Read(p)
	r.left -= int64(n)
	if r.capturing {
		r.capture = append(r.capture, p[:n]...)
	}
	return n, err
}

// unread gives back the last byte read, so the next read returns it again.
func (r *Reader) unread(b byte) { r.unreadB, r.hasUnread = b, true }

// avail is how many more bytes may be read.
func (r *Reader) avail() int64 {
	if r.hasUnread {
		return r.left + 1
	}
	return r.left
}

// full reads exactly len(p) bytes.
func (r *Reader) full(p []byte, what string) error {
	if int64(len(p)) > r.avail() {
		return fmt.Errorf("reading %s: %w: %d more bytes needed, %d of %d left", what, ErrTooLarge, len(p), r.avail(), r.limit)
	}
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("reading %s: %w: stream ended", what, io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// Bytes reads n bytes into a new slice. The limit is checked before
// anything is allocated.
func (r *Reader) Bytes(n int, what string) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %s has negative length %d", ErrMalformed, what, n)
	}
	if int64(n) > r.avail() {
		return nil, fmt.Errorf("reading %s: %w: %d bytes declared, %d of %d left", what, ErrTooLarge, n, r.avail(), r.limit)
	}
	b := make([]byte, n)
	return b, r.full(b, what)
}

// Skip reads and drops n bytes without allocating for them (beyond the
// capture, when one is on).
func (r *Reader) Skip(n int64, what string) error {
	if n < 0 {
		return fmt.Errorf("%w: %s has negative length %d", ErrMalformed, what, n)
	}
	if n > r.avail() {
		return fmt.Errorf("reading %s: %w: %d bytes declared, %d of %d left", what, ErrTooLarge, n, r.avail(), r.limit)
	}
	for n > 0 {
		k := min(n, int64(len(r.scratch)))
		if err := r.full(r.scratch[:k], what); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Uint8 reads one byte.
func (r *Reader) Uint8(what string) (byte, error) {
	err := r.full(r.scratch[:1], what)
	return r.scratch[0], err
}

// Uint16 reads a big-endian unsigned short.
func (r *Reader) Uint16(what string) (uint16, error) {
	b := r.scratch[:2]
	err := r.full(b, what)
	return uint16(b[0])<<8 | uint16(b[1]), err
}

// Int32 reads a big-endian int.
func (r *Reader) Int32(what string) (int32, error) {
	b := r.scratch[:4]
	err := r.full(b, what)
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])), err
}

// Int64 reads a big-endian long.
func (r *Reader) Int64(what string) (int64, error) {
	b := r.scratch[:8]
	if err := r.full(b, what); err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return int64(v), nil
}

// UTF reads a string as DataInput.readUTF does.
func (r *Reader) UTF(what string) (string, error) {
	n, err := r.Uint16(what + " length")
	if err != nil {
		return "", err
	}
	b, err := r.Bytes(int(n), what)
	if err != nil {
		return "", err
	}
	s, err := DecodeModifiedUTF8(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return s, nil
}

// startCapture begins recording every byte read.
func (r *Reader) startCapture() {
	r.capture, r.capturing = nil, true
}

// stopCapture ends recording and returns what was read since startCapture.
func (r *Reader) stopCapture() []byte {
	b := r.capture
	r.capture, r.capturing = nil, false
	return b
}

// BlockData is an io.Reader over the block-data records
// (TC_BLOCKDATA/TC_BLOCKDATALONG) that ObjectOutputStream writes for
// primitive data, presenting their contents as one byte stream. Java splits
// the data into records of at most 1024 bytes wherever the boundary falls,
// even inside a string, so values must be read across records.
type BlockData struct {
	src  *Reader
	left int64 // bytes left in the current record
}

// NewBlockData returns a reader of the block data that follows in src.
func NewBlockData(src *Reader) *BlockData { return &BlockData{src: src} }

// Read implements io.Reader. It returns io.EOF at the end of the underlying
// stream and an error at anything that is not block data.
func (b *BlockData) Read(p []byte) (int, error) {
	for b.left == 0 {
		tc, err := b.src.Uint8("block data record")
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, io.EOF
			}
			return 0, err
		}
		switch tc {
		case tcBlockData:
			n, err := b.src.Uint8("block data length")
			if err != nil {
				return 0, err
			}
			b.left = int64(n)
		case tcBlockDataLong:
			n, err := b.src.Int32("block data length")
			if err != nil {
				return 0, err
			}
			if n < 0 {
				return 0, fmt.Errorf("%w: block data length %d is negative", ErrMalformed, n)
			}
			b.left = int64(n)
		case tcReset:
			// Harmless between records.
		default:
			return 0, fmt.Errorf("%w: expected block data, found type code 0x%02x", ErrMalformed, tc)
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.src.Read(p)
	b.left -= int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the record promised more
	}
	return n, err
}

// AppendBlockData appends data as ObjectOutputStream writes it in
// block-data mode: records of at most 1024 bytes, short ones (up to 255)
// as TC_BLOCKDATA and longer ones as TC_BLOCKDATALONG.
func AppendBlockData(dst, data []byte) []byte {
	const maxBlock = 1024
	for len(data) > 0 {
		n := min(len(data), maxBlock)
		if n <= 0xFF {
			dst = append(dst, tcBlockData, byte(n))
		} else {
			dst = append(dst, tcBlockDataLong, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		}
		dst = append(dst, data[:n]...)
		data = data[n:]
	}
	return dst
}
