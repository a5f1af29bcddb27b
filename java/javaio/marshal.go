package javaio

import (
	"bytes"
	"encoding/binary"
)

// Container is the Java class that wraps a marshalled object on the wire.
type Container int

const (
	// MarshalledObject is java.rmi.MarshalledObject, which discovery
	// protocol version 1 carries.
	MarshalledObject Container = iota
	// MarshalledInstance is net.jini.io.MarshalledInstance, which protocol
	// version 2 carries.
	MarshalledInstance
)

type containerClass struct {
	name  string
	suid  uint64
	flags byte
}

// The serialVersionUIDs and flags are those of the Java classes, so Java
// readers accept what jinid writes.
var containers = [...]containerClass{
	MarshalledObject:   {"java.rmi.MarshalledObject", 0x7cbd1e97ed63fc3e, scSerializable},
	MarshalledInstance: {"net.jini.io.MarshalledInstance", 0xb803f4446cad3c28, scSerializable | scWriteMethod},
}

const byteArraySUID = 0xacf317f8060854e0

// appendContainerPrefix writes the stream header, the container's class
// descriptor and its fields up to the length of objBytes, exactly as
// ObjectOutputStream does.
func appendContainerPrefix(dst []byte, c Container, hash int32, objLen int) []byte {
	cc := containers[c]
	dst = append(dst, 0xAC, 0xED, 0x00, streamVersion, tcObject, tcClassDesc)
	dst = appendShortUTF(dst, cc.name)
	dst = binary.BigEndian.AppendUint64(dst, cc.suid)
	dst = append(dst, cc.flags, 0, 3)
	dst = append(dst, 'I')
	dst = appendShortUTF(dst, "hash")
	dst = append(dst, '[')
	dst = appendShortUTF(dst, "locBytes")
	dst = append(dst, tcString)
	dst = appendShortUTF(dst, "[B") // handle 1
	dst = append(dst, '[')
	dst = appendShortUTF(dst, "objBytes")
	dst = append(dst, tcReference, 0x00, 0x7E, 0x00, 0x01)
	dst = append(dst, tcEndBlockData, tcNull)
	// The object's values: hash, locBytes (no codebase), objBytes.
	dst = binary.BigEndian.AppendUint32(dst, uint32(hash))
	dst = append(dst, tcNull, tcArray, tcClassDesc)
	dst = appendShortUTF(dst, "[B")
	dst = binary.BigEndian.AppendUint64(dst, byteArraySUID)
	dst = append(dst, scSerializable, 0, 0, tcEndBlockData, tcNull)
	return binary.BigEndian.AppendUint32(dst, uint32(objLen))
}

// appendShortUTF writes a string known to be short and ASCII.
func appendShortUTF(dst []byte, s string) []byte {
	dst = append(dst, byte(len(s)>>8), byte(len(s)))
	return append(dst, s...)
}

// objHash is the hash both container classes compute over objBytes.
func objHash(b []byte) int32 {
	var h int32
	for _, c := range b {
		h = 31*h + int32(int8(c))
	}
	return h
}

// AppendMarshalled appends a complete object stream holding a container
// whose marshalled object is the object stream obj.
func AppendMarshalled(dst []byte, c Container, obj []byte) []byte {
	dst = appendContainerPrefix(dst, c, objHash(obj), len(obj))
	dst = append(dst, obj...)
	if containers[c].flags&scWriteMethod != 0 {
		dst = append(dst, tcEndBlockData)
	}
	return dst
}

// AppendMarshalledString appends a complete object stream holding a
// container whose marshalled object is the java.lang.String s. This is what
// a jinid lookup service puts where Java clients expect a registrar proxy.
func AppendMarshalledString(dst []byte, c Container, s string) []byte {
	obj := []byte{0xAC, 0xED, 0x00, streamVersion}
	if n := ModifiedUTF8Len(s); n <= MaxUTFLen {
		obj = append(obj, tcString, byte(n>>8), byte(n))
	} else {
		obj = append(obj, tcLongString)
		obj = binary.BigEndian.AppendUint64(obj, uint64(n))
	}
	obj = AppendModifiedUTF8(obj, s)
	return AppendMarshalled(dst, c, obj)
}

// UnmarshalString reports whether stream is exactly what
// AppendMarshalledString writes, and if so returns the string. A proxy
// from a Java lookup service never matches, so this tells jinid registrars
// from Java ones without running any Java.
func UnmarshalString(stream []byte) (s string, c Container, ok bool) {
	for c := range containers {
		if s, ok := matchContainer(stream, Container(c)); ok {
			return s, Container(c), true
		}
	}
	return "", 0, false
}

func matchContainer(stream []byte, c Container) (string, bool) {
	probe := appendContainerPrefix(nil, c, 0, 0)
	// The prefix holds the hash at a fixed place and the objBytes length
	// at its end; everything else must match byte for byte.
	hashAt := bytes.Index(probe, []byte{tcEndBlockData, tcNull}) + 2
	if len(stream) < len(probe) ||
		!bytes.Equal(stream[:hashAt], probe[:hashAt]) ||
		!bytes.Equal(stream[hashAt+4:len(probe)-4], probe[hashAt+4:len(probe)-4]) {
		return "", false
	}
	n := binary.BigEndian.Uint32(stream[len(probe)-4:])
	rest := stream[len(probe):]
	trailer := 0
	if containers[c].flags&scWriteMethod != 0 {
		trailer = 1
	}
	if uint64(n)+uint64(trailer) != uint64(len(rest)) {
		return "", false
	}
	obj := rest[:n]
	if trailer == 1 && rest[n] != tcEndBlockData {
		return "", false
	}
	if len(obj) < 7 || !bytes.Equal(obj[:4], []byte{0xAC, 0xED, 0x00, streamVersion}) {
		return "", false
	}
	var body []byte
	switch obj[4] {
	case tcString:
		l := int(binary.BigEndian.Uint16(obj[5:7]))
		body = obj[7:]
		if l != len(body) {
			return "", false
		}
	case tcLongString:
		if len(obj) < 13 {
			return "", false
		}
		l := binary.BigEndian.Uint64(obj[5:13])
		body = obj[13:]
		if l != uint64(len(body)) {
			return "", false
		}
	default:
		return "", false
	}
	s, err := DecodeModifiedUTF8(body)
	if err != nil {
		return "", false
	}
	return s, true
}
