package javaio

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxValues bounds the values one stream may hold, whatever its size: a
// null costs one byte on the wire and 16 in memory.
const maxValues = 1 << 18

// Decoder reads a Java object stream held in memory, the way an
// ObjectInputStream does: objects with ReadObject, primitives written
// with writeInt, writeLong and the like (which travel as block data)
// with ReadInt, ReadLong and so on, in the order they were written.
//
// It builds the objects it reads (see Value). Everything it builds is
// bounded by the stream's length and by its limits on nesting, handles
// and values, so a hostile stream costs at most a small multiple of its
// own size.
type Decoder struct {
	b       []byte
	off     int
	handles []Value
	depth   int
	values  int
	// block is what is left of the block data being read at top level.
	block []byte
}

// NewDecoder returns a decoder for the object stream b, which must start
// with the stream header.
func NewDecoder(b []byte) (*Decoder, error) {
	d := &Decoder{b: b}
	magic, err := d.u16("stream magic")
	if err != nil {
		return nil, err
	}
	version, err := d.u16("stream version")
	if err != nil {
		return nil, err
	}
	if magic != streamMagic || version != streamVersion {
		return nil, fmt.Errorf("%w: header %04x %04x, want aced 0005", ErrMalformed, magic, version)
	}
	return d, nil
}

// Offset returns how many bytes of the stream have been read.
func (d *Decoder) Offset() int { return d.off }

// AtEnd reports whether the whole stream has been read.
func (d *Decoder) AtEnd() bool { return d.off == len(d.b) && len(d.block) == 0 }

// ReadObject reads the next object. Block data not yet read before it is
// an error, as in Java (OptionalDataException).
func (d *Decoder) ReadObject() (Value, error) {
	if len(d.block) > 0 {
		return nil, fmt.Errorf("%w: %d bytes of primitive data where an object was expected", ErrMalformed, len(d.block))
	}
	return d.content()
}

// ReadBool, ReadInt and the others read primitives from block data.
func (d *Decoder) ReadBool() (bool, error) {
	b, err := d.prim(1, "boolean")
	return err == nil && b[0] != 0, err
}

func (d *Decoder) ReadInt() (int32, error) {
	b, err := d.prim(4, "int")
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func (d *Decoder) ReadLong() (int64, error) {
	b, err := d.prim(8, "long")
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// prim takes n bytes of top-level block data, reading the next block
// header when the current block is used up. Java may split a value
// across blocks.
func (d *Decoder) prim(n int, what string) ([]byte, error) {
	var out []byte
	for len(out) < n {
		if len(d.block) == 0 {
			if err := d.nextBlock(what); err != nil {
				return nil, err
			}
		}
		k := min(n-len(out), len(d.block))
		if out == nil && k == n {
			out, d.block = d.block[:n], d.block[n:]
			return out, nil
		}
		out = append(out, d.block[:k]...)
		d.block = d.block[k:]
	}
	return out, nil
}

func (d *Decoder) nextBlock(what string) error {
	tc, err := d.u8(what)
	if err != nil {
		return err
	}
	var n int
	switch tc {
	case tcBlockData:
		l, err := d.u8("block data length")
		if err != nil {
			return err
		}
		n = int(l)
	case tcBlockDataLong:
		l, err := d.u32("block data length")
		if err != nil {
			return err
		}
		n = int(l)
	default:
		return fmt.Errorf("%w: type code 0x%02x where %s data was expected", ErrMalformed, tc, what)
	}
	b, err := d.take(n, "block data")
	if err != nil {
		return err
	}
	d.block = b
	return nil
}

func (d *Decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, fmt.Errorf("%w: %s: %d bytes wanted, %d left", ErrMalformed, what, n, len(d.b)-d.off)
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b, nil
}

func (d *Decoder) u8(what string) (byte, error) {
	b, err := d.take(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *Decoder) u16(what string) (uint16, error) {
	b, err := d.take(2, what)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

func (d *Decoder) u32(what string) (uint32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (d *Decoder) u64(what string) (uint64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

func (d *Decoder) utf(what string, long bool) (string, error) {
	var n int
	if long {
		l, err := d.u64(what + " length")
		if err != nil {
			return "", err
		}
		if l > uint64(len(d.b)) {
			return "", fmt.Errorf("%w: %s of %d bytes", ErrMalformed, what, l)
		}
		n = int(l)
	} else {
		l, err := d.u16(what + " length")
		if err != nil {
			return "", err
		}
		n = int(l)
	}
	b, err := d.take(n, what)
	if err != nil {
		return "", err
	}
	s, err := DecodeModifiedUTF8(b)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	return s, nil
}

func (d *Decoder) count() error {
	d.values++
	if d.values > maxValues {
		return fmt.Errorf("%w: more than %d values", ErrMalformed, maxValues)
	}
	return nil
}

func (d *Decoder) newHandle(v Value) (int, error) {
	if len(d.handles) >= maxHandles {
		return 0, fmt.Errorf("%w: more than %d handles", ErrMalformed, maxHandles)
	}
	d.handles = append(d.handles, v)
	return len(d.handles) - 1, nil
}

func (d *Decoder) enter(what string) error {
	d.depth++
	if d.depth > maxDepth {
		return fmt.Errorf("%w: %s nested more than %d deep", ErrMalformed, what, maxDepth)
	}
	return nil
}

// content reads one element where an object is expected.
func (d *Decoder) content() (Value, error) {
	if err := d.enter("objects"); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	if err := d.count(); err != nil {
		return nil, err
	}
	tc, err := d.u8("type code")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		return d.ref()
	case tcObject:
		return d.newObject()
	case tcString, tcLongString:
		s, err := d.utf("string", tc == tcLongString)
		if err != nil {
			return nil, err
		}
		_, err = d.newHandle(s)
		return s, err
	case tcArray:
		return d.newArray()
	case tcEnum:
		c, err := d.classDesc()
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("%w: enum constant with a null class", ErrMalformed)
		}
		e := &Enum{Class: c}
		if _, err := d.newHandle(e); err != nil {
			return nil, err
		}
		name, err := d.content()
		if err != nil {
			return nil, err
		}
		s, ok := name.(string)
		if !ok {
			return nil, fmt.Errorf("%w: enum constant of %s without a name", ErrMalformed, c)
		}
		e.Name = s
		return e, nil
	case tcClass:
		c, err := d.classDesc()
		if err != nil {
			return nil, err
		}
		co := &ClassObject{Class: c}
		_, err = d.newHandle(co)
		return co, err
	case tcClassDesc, tcProxyClassDesc:
		return nil, fmt.Errorf("%w: class descriptor where an object was expected", ErrMalformed)
	case tcReset, tcException:
		// Neither is written by the peers jinid talks to; refusing them
		// keeps handles simple.
		return nil, fmt.Errorf("%w: type code 0x%02x (reset or exception) is not supported", ErrMalformed, tc)
	case tcBlockData, tcBlockDataLong:
		return nil, fmt.Errorf("%w: block data where an object was expected", ErrMalformed)
	default:
		return nil, fmt.Errorf("%w: unknown type code 0x%02x at byte %d", ErrMalformed, tc, d.off-1)
	}
}

func (d *Decoder) ref() (Value, error) {
	h, err := d.u32("handle")
	if err != nil {
		return nil, err
	}
	i := int64(h) - baseHandle
	if i < 0 || i >= int64(len(d.handles)) {
		return nil, fmt.Errorf("%w: reference to handle 0x%x, which does not exist", ErrMalformed, h)
	}
	return d.handles[i], nil
}

// classDesc reads a class descriptor, a reference to one, or null.
func (d *Decoder) classDesc() (*Class, error) {
	if err := d.enter("class descriptors"); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	tc, err := d.u8("class descriptor")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := d.ref()
		if err != nil {
			return nil, err
		}
		c, ok := v.(*Class)
		if !ok {
			return nil, fmt.Errorf("%w: reference to a %T where a class descriptor was expected", ErrMalformed, v)
		}
		return c, nil
	case tcClassDesc, tcProxyClassDesc:
		return d.newClassDesc(tc)
	}
	return nil, fmt.Errorf("%w: type code 0x%02x where a class descriptor was expected", ErrMalformed, tc)
}

func (d *Decoder) newClassDesc(tc byte) (*Class, error) {
	if err := d.count(); err != nil {
		return nil, err
	}
	c := &Class{}
	if tc == tcProxyClassDesc {
		c.Proxy, c.Flags = true, scSerializable
		if _, err := d.newHandle(c); err != nil {
			return nil, err
		}
		n, err := d.u32("proxy interface count")
		if err != nil {
			return nil, err
		}
		// Each name takes at least its two length bytes.
		if int64(n)*2 > int64(len(d.b)-d.off) {
			return nil, fmt.Errorf("%w: %d proxy interfaces", ErrMalformed, n)
		}
		c.Interfaces = make([]string, n)
		for i := range c.Interfaces {
			if c.Interfaces[i], err = d.utf("proxy interface name", false); err != nil {
				return nil, err
			}
		}
	} else {
		var err error
		if c.Name, err = d.utf("class name", false); err != nil {
			return nil, err
		}
		suid, err := d.u64("serialVersionUID")
		if err != nil {
			return nil, err
		}
		c.SUID = int64(suid)
		if _, err := d.newHandle(c); err != nil {
			return nil, err
		}
		if c.Flags, err = d.u8("class flags"); err != nil {
			return nil, err
		}
		n, err := d.u16("field count")
		if err != nil {
			return nil, err
		}
		if int(n)*3 > len(d.b)-d.off {
			return nil, fmt.Errorf("%w: class %s with %d fields", ErrMalformed, c.Name, n)
		}
		c.Fields = make([]Field, n)
		for i := range c.Fields {
			f := &c.Fields[i]
			if f.Code, err = d.u8("field type code"); err != nil {
				return nil, err
			}
			if f.Name, err = d.utf("field name", false); err != nil {
				return nil, err
			}
			switch f.Code {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case '[', 'L':
				v, err := d.content()
				if err != nil {
					return nil, err
				}
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("%w: type of field %s.%s is not a string", ErrMalformed, c.Name, f.Name)
				}
				f.Type = s
			default:
				return nil, fmt.Errorf("%w: field type code 0x%02x in class %s", ErrMalformed, f.Code, c.Name)
			}
		}
	}
	// The class annotation (a codebase, in JERI streams) is read and
	// dropped: jinid never loads classes.
	if _, err := d.annotation(); err != nil {
		return nil, fmt.Errorf("annotation of class %s: %w", c, err)
	}
	super, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	// The descriptor's handle exists before its superclass is read, so a
	// hostile stream can make a class its own ancestor.
	n := 0
	for k := super; k != nil; k = k.Super {
		if n++; k == c || n > maxDepth {
			return nil, fmt.Errorf("%w: class %s has a cyclic or too deep hierarchy", ErrMalformed, c)
		}
	}
	c.Super = super
	return c, nil
}

// annotation reads block data and objects up to TC_ENDBLOCKDATA.
func (d *Decoder) annotation() ([]Value, error) {
	var out []Value
	for {
		tc, err := d.u8("annotation")
		if err != nil {
			return nil, err
		}
		switch tc {
		case tcEndBlockData:
			return out, nil
		case tcBlockData, tcBlockDataLong:
			d.off--
			if err := d.nextBlock("custom"); err != nil {
				return nil, err
			}
			if err := d.count(); err != nil {
				return nil, err
			}
			out = append(out, Block(d.block))
			d.block = nil
		default:
			d.off--
			v, err := d.content()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
}

func (d *Decoder) newObject() (Value, error) {
	c, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: object with a null class descriptor", ErrMalformed)
	}
	chain := c.chain()
	if len(chain) > maxDepth {
		return nil, fmt.Errorf("%w: class hierarchy of %s deeper than %d", ErrMalformed, c, maxDepth)
	}
	o := &Object{Class: c, Data: make([]ClassData, len(chain))}
	if _, err := d.newHandle(o); err != nil {
		return nil, err
	}
	for i, k := range chain {
		cd := &o.Data[i]
		if k.Flags&scExternalizable != 0 {
			if k.Flags&scBlockData == 0 {
				return nil, fmt.Errorf("%w: externalizable class %s written in the old protocol", ErrMalformed, k)
			}
			if cd.Custom, err = d.annotation(); err != nil {
				return nil, err
			}
			continue
		}
		cd.Fields = make([]Value, len(k.Fields))
		for j, f := range k.Fields {
			if cd.Fields[j], err = d.field(f); err != nil {
				return nil, fmt.Errorf("field %s.%s: %w", k, f.Name, err)
			}
		}
		if k.Flags&scWriteMethod != 0 {
			if cd.Custom, err = d.annotation(); err != nil {
				return nil, fmt.Errorf("custom data of %s: %w", k, err)
			}
		}
	}
	return o, nil
}

func (d *Decoder) field(f Field) (Value, error) {
	switch f.Code {
	case 'Z':
		b, err := d.u8("boolean")
		return b != 0, err
	case 'B':
		b, err := d.u8("byte")
		return int8(b), err
	case 'C':
		return d.u16("char")
	case 'S':
		v, err := d.u16("short")
		return int16(v), err
	case 'I':
		v, err := d.u32("int")
		return int32(v), err
	case 'J':
		v, err := d.u64("long")
		return int64(v), err
	case 'F':
		v, err := d.u32("float")
		return math.Float32frombits(v), err
	case 'D':
		v, err := d.u64("double")
		return math.Float64frombits(v), err
	}
	return d.content()
}

func (d *Decoder) newArray() (Value, error) {
	c, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	if c == nil || c.Proxy || len(c.Name) < 2 || c.Name[0] != '[' {
		return nil, fmt.Errorf("%w: array of class %s, which is not an array class", ErrMalformed, c)
	}
	a := &Array{Class: c}
	if _, err := d.newHandle(a); err != nil {
		return nil, err
	}
	n, err := d.u32("array length")
	if err != nil {
		return nil, err
	}
	if size := primSize(c.Name[1]); size > 0 {
		if int64(n)*int64(size) > int64(len(d.b)-d.off) {
			return nil, fmt.Errorf("%w: %s of %d elements in %d bytes", ErrMalformed, c.Name, n, len(d.b)-d.off)
		}
		a.Prim, err = d.take(int(n)*size, "array elements")
		return a, err
	}
	// Each element takes at least one byte.
	if int64(n) > int64(len(d.b)-d.off) {
		return nil, fmt.Errorf("%w: %s of %d elements in %d bytes", ErrMalformed, c.Name, n, len(d.b)-d.off)
	}
	a.Elems = make([]Value, n)
	for i := range a.Elems {
		if a.Elems[i], err = d.content(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Decode reads the one object an object stream holds.
func Decode(b []byte) (Value, error) {
	d, err := NewDecoder(b)
	if err != nil {
		return nil, err
	}
	return d.ReadObject()
}
