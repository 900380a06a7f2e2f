package codec

import "strings"

// MarshalStored is Marshal of an object, also returning where its
// metadata's resourceVersion member goes (ok false when it has no
// metadata object): what FindResourceVersionMarshaled finds in the result,
// noted while the metadata is written instead of found by a scan of the
// bytes, which on an update's object (managedFields first) skips a few
// kilobytes. The splice's bytes are the result. It also finds one where
// that scan gives up (keys whose escaped order is not their order,
// nesting deeper than it scans): the splice is where Marshal would have
// written the member.
func MarshalStored(obj map[string]any) (_ []byte, _ RVSplice, ok bool, _ error) {
	e := encoders.Get().(*encoder)
	defer e.release()
	b := make([]byte, 0, 4096)
	members := e.push(obj)
	at, to, comma := -1, -1, 0
	b = append(b, '{')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, mb.key)
		b = append(b, ':')
		var err error
		if md, isMap := mb.value.(map[string]any); isMap && mb.key == "metadata" {
			b, at, to, comma, err = e.appendMetadata(b, md)
		} else {
			b, err = e.appendValue(b, mb.value)
		}
		if err != nil {
			return nil, RVSplice{}, false, err
		}
	}
	e.pop(members)
	b = append(b, '}')
	if at < 0 {
		return b, RVSplice{}, false, nil
	}
	return b, RVSplice{stored: b, at: at, to: to, comma: comma}, true, nil
}

// appendMetadata is appendObject for a metadata object, returning where
// its resourceVersion member is, or goes, as metadataRV reads it: the
// member's bytes [at, to), or an empty span where it goes, followed
// (comma 1) or preceded (comma -1) by a comma when other members are
// there.
func (e *encoder) appendMetadata(b []byte, m map[string]any) (_ []byte, at, to, comma int, _ error) {
	members := e.push(m)
	at = -1
	b = append(b, '{')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		start := len(b)
		c := strings.Compare(mb.key, "resourceVersion")
		if at < 0 && c > 0 {
			at, to, comma = start, start, 1
		}
		b = appendString(b, mb.key)
		b = append(b, ':')
		var err error
		if b, err = e.appendValue(b, mb.value); err != nil {
			return nil, 0, 0, 0, err
		}
		if c == 0 {
			at, to = start, len(b)
		}
	}
	if at < 0 {
		at, to = len(b), len(b)
		if len(members) > 0 {
			comma = -1
		}
	}
	e.pop(members)
	return append(b, '}'), at, to, comma, nil
}
