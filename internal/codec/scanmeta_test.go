package codec

// ScanMeta and scanMetadata read what IndexStored reads, in a scan of
// their own: the server no longer calls them, and they stay as the
// reference IndexStored is checked against (TestIndexStored,
// FuzzIndexStored), itself checked against decoding (FuzzScanMeta).

// ScanMeta reads apiVersion, metadata.name, metadata.namespace and
// metadata.labels from a compact JSON object without decoding the rest. A
// field of another type than string reads as empty, as the unstructured
// accessors read it, and a repeated key counts by its last occurrence, as
// decoding does. ok is false when encoded is not a compact JSON object
// (malformed, or with whitespace).
func ScanMeta(encoded []byte) (Meta, bool) {
	var m Meta
	s := scanner{b: encoded}
	if !s.consume('{') {
		return Meta{}, false
	}
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return Meta{}, false
		}
		k, ok := s.key()
		if !ok {
			return Meta{}, false
		}
		switch {
		case k.is(encoded, "apiVersion"):
			m.APIVersion, ok = s.stringOrEmpty()
		case k.is(encoded, "metadata"):
			m.Name, m.Namespace, m.Labels = "", "", nil
			if s.peek('{') {
				ok = s.scanMetadata(&m)
			} else {
				ok = s.value(0)
			}
		default:
			ok = s.value(0)
		}
		if !ok {
			return Meta{}, false
		}
	}
	if s.i != len(encoded) {
		return Meta{}, false
	}
	return m, true
}

// scanMetadata reads the metadata object at s.i into m.
func (s *scanner) scanMetadata(m *Meta) bool {
	s.i++ // '{'
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return false
		}
		k, ok := s.key()
		if !ok {
			return false
		}
		switch {
		case k.is(s.b, "name"):
			m.Name, ok = s.stringOrEmpty()
		case k.is(s.b, "namespace"):
			m.Namespace, ok = s.stringOrEmpty()
		case k.is(s.b, "labels"):
			m.Labels, ok = s.labels()
		default:
			ok = s.value(0)
		}
		if !ok {
			return false
		}
	}
	return true
}
