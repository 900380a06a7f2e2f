package codec

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// AppendObjectMetaProtobuf appends to dst the protobuf encoding of a
// compact JSON ObjectMeta (an object's metadata as stored, and nothing
// after it): what decoding it into metav1.ObjectMeta, case-sensitively as
// upstream's server decodes, and marshalling that would give, as far as
// decoders can tell, without building the Go value, which costs five
// times as much. ok is false when encoded is not what the server stores (a
// value of another type, a time that does not parse, a repeated member):
// the caller then takes the long way, which says what is wrong. Members
// ObjectMeta does not have are skipped, as decoding skips them.
func AppendObjectMetaProtobuf(dst, encoded []byte) (out []byte, ok bool) {
	s := scanner{b: encoded}
	if !s.peek('{') {
		return dst, false
	}
	var seen members
	ok = eachMember(&s, func(name []byte) bool {
		if !seen.first(objectMetaFields, name) {
			return false
		}
		switch string(name) {
		case "name":
			return s.protoString(&dst, 1)
		case "generateName":
			return s.protoString(&dst, 2)
		case "namespace":
			return s.protoString(&dst, 3)
		case "selfLink":
			return s.protoString(&dst, 4)
		case "uid":
			return s.protoString(&dst, 5)
		case "resourceVersion":
			return s.protoString(&dst, 6)
		case "generation":
			return s.protoInt(&dst, 7)
		case "creationTimestamp":
			return s.protoTime(&dst, 8)
		case "deletionTimestamp":
			return s.protoTime(&dst, 9)
		case "deletionGracePeriodSeconds":
			return s.protoInt(&dst, 10)
		case "labels":
			return s.protoStringMap(&dst, 11)
		case "annotations":
			return s.protoStringMap(&dst, 12)
		case "ownerReferences":
			return s.protoMessages(&dst, 13, ownerReferenceProto)
		case "finalizers":
			return s.protoArray(&dst, func() bool { return s.protoString(&dst, 14) })
		case "managedFields":
			return s.protoMessages(&dst, 17, managedFieldsEntryProto)
		}
		return s.value(1)
	})
	return dst, ok && s.i == len(encoded)
}

// ownerReferenceProto appends one metav1.OwnerReference's fields.
func ownerReferenceProto(s *scanner, dst *[]byte) bool {
	var seen members
	return eachMember(s, func(name []byte) bool {
		if !seen.first(ownerReferenceFields, name) {
			return false
		}
		switch string(name) {
		case "kind":
			return s.protoString(dst, 1)
		case "name":
			return s.protoString(dst, 3)
		case "uid":
			return s.protoString(dst, 4)
		case "apiVersion":
			return s.protoString(dst, 5)
		case "controller":
			return s.protoBool(dst, 6)
		case "blockOwnerDeletion":
			return s.protoBool(dst, 7)
		}
		return s.value(2)
	})
}

// managedFieldsEntryProto appends one metav1.ManagedFieldsEntry's fields.
func managedFieldsEntryProto(s *scanner, dst *[]byte) bool {
	var seen members
	return eachMember(s, func(name []byte) bool {
		if !seen.first(managedFieldsEntryFields, name) {
			return false
		}
		switch string(name) {
		case "manager":
			return s.protoString(dst, 1)
		case "operation":
			return s.protoString(dst, 2)
		case "apiVersion":
			return s.protoString(dst, 3)
		case "time":
			return s.protoTime(dst, 4)
		case "fieldsType":
			return s.protoString(dst, 6)
		case "fieldsV1":
			if s.skipNull() {
				return true
			}
			// FieldsV1 keeps its JSON as it is, in its field 1.
			start := s.i
			if !s.peek('{') || !s.value(2) {
				return false
			}
			fields := s.b[start:s.i]
			*dst = protowire.AppendTag(*dst, 7, protowire.BytesType)
			*dst = protowire.AppendVarint(*dst, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(fields))))
			*dst = protowire.AppendTag(*dst, 1, protowire.BytesType)
			*dst = protowire.AppendBytes(*dst, fields)
			return true
		case "subresource":
			return s.protoString(dst, 8)
		}
		return s.value(2)
	})
}

// The members each message is transcoded from.
var (
	objectMetaFields = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
		"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
		"ownerReferences", "finalizers", "managedFields"}
	ownerReferenceFields     = []string{"kind", "name", "uid", "apiVersion", "controller", "blockOwnerDeletion"}
	managedFieldsEntryFields = []string{"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"}
)

// members marks the known members of one object met so far.
type members uint32

// first reports whether name is not one of known met before. A repeated
// member is left to the long way: decoding keeps its last value, where
// protobuf would merge or repeat what was appended for each.
func (m *members) first(known []string, name []byte) bool {
	for i, k := range known {
		if string(name) == k {
			if *m&(1<<i) != 0 {
				return false
			}
			*m |= 1 << i
			return true
		}
	}
	return true
}

// skipNull consumes a null, which encoding/json leaves as the zero value.
func (s *scanner) skipNull() bool {
	return s.peek('n') && s.literal("null")
}

func (s *scanner) protoString(dst *[]byte, field protowire.Number) bool {
	if s.skipNull() {
		return true
	}
	if !s.peek('"') {
		return false
	}
	k, ok := s.str()
	if !ok {
		return false
	}
	*dst = protowire.AppendTag(*dst, field, protowire.BytesType)
	if k.plain {
		*dst = protowire.AppendBytes(*dst, s.b[k.start:k.end])
	} else {
		*dst = protowire.AppendString(*dst, k.string(s.b))
	}
	return true
}

func (s *scanner) protoInt(dst *[]byte, field protowire.Number) bool {
	if s.skipNull() {
		return true
	}
	start := s.i
	if !s.peek('-') && (s.i >= len(s.b) || s.b[s.i] < '0' || s.b[s.i] > '9') || !s.number() {
		return false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil { // a fraction or an exponent: not an int64 to encoding/json
		return false
	}
	*dst = protowire.AppendTag(*dst, field, protowire.VarintType)
	*dst = protowire.AppendVarint(*dst, uint64(n))
	return true
}

func (s *scanner) protoBool(dst *[]byte, field protowire.Number) bool {
	var v bool
	switch {
	case s.skipNull():
		return true
	case s.literal("true"):
		v = true
	case !s.literal("false"):
		return false
	}
	*dst = protowire.AppendTag(*dst, field, protowire.VarintType)
	*dst = protowire.AppendVarint(*dst, protowire.EncodeBool(v))
	return true
}

// protoTime appends a metav1.Time, which JSON writes as RFC 3339 (to the
// second) and protobuf as seconds and nanoseconds.
func (s *scanner) protoTime(dst *[]byte, field protowire.Number) bool {
	if s.skipNull() {
		return true
	}
	if !s.peek('"') {
		return false
	}
	k, ok := s.str()
	if !ok || !k.plain {
		return false
	}
	t, err := time.Parse(time.RFC3339, string(s.b[k.start:k.end]))
	if err != nil {
		return false
	}
	var ts []byte
	if sec := t.Unix(); sec != 0 {
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(sec))
	}
	if ns := t.Nanosecond(); ns != 0 {
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(ns))
	}
	*dst = protowire.AppendTag(*dst, field, protowire.BytesType)
	*dst = protowire.AppendBytes(*dst, ts)
	return true
}

// protoStringMap appends a map<string, string>: one entry message (key 1,
// value 2) per member.
func (s *scanner) protoStringMap(dst *[]byte, field protowire.Number) bool {
	if s.skipNull() {
		return true
	}
	var entry []byte
	return eachMember(s, func(name []byte) bool {
		if !s.peek('"') {
			return false // null or another type: the long way decides
		}
		entry = protowire.AppendTag(entry[:0], 1, protowire.BytesType)
		entry = protowire.AppendBytes(entry, name)
		if !s.protoString(&entry, 2) {
			return false
		}
		*dst = protowire.AppendTag(*dst, field, protowire.BytesType)
		*dst = protowire.AppendBytes(*dst, entry)
		return true
	})
}

// protoArray calls elem for each element of the array at s.i.
func (s *scanner) protoArray(dst *[]byte, elem func() bool) bool {
	if s.skipNull() {
		return true
	}
	if !s.consume('[') {
		return false
	}
	for first := true; !s.consume(']'); first = false {
		if !first && !s.consume(',') {
			return false
		}
		if !elem() {
			return false
		}
	}
	return true
}

// protoMessages appends an array of objects as a repeated message field,
// each object's fields appended by fields.
func (s *scanner) protoMessages(dst *[]byte, field protowire.Number, fields func(*scanner, *[]byte) bool) bool {
	var msg []byte
	return s.protoArray(dst, func() bool {
		msg = msg[:0]
		if !fields(s, &msg) {
			return false
		}
		*dst = protowire.AppendTag(*dst, field, protowire.BytesType)
		*dst = protowire.AppendBytes(*dst, msg)
		return true
	})
}
