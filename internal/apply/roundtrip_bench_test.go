package apply

import (
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// benchRoundTrip is BenchmarkUpdateOwn with what the handler does around
// it: decode the stored object (keeping its managedFields encoded when
// raw), record the update, encode the result for storage.
func benchRoundTrip(b *testing.B, raw bool) {
	m, live := benchWidgets(b)
	enc, _ := codec.Marshal(live)
	inBatches(b, live, changeOwn, func(next map[string]any) {
		old, _, err := codec.Decode(enc, "", codec.DecodeOptions{RawManagedFields: raw})
		if err != nil {
			b.Fatal(err)
		}
		m.Update(old, next, "creator")
		if _, err := codec.Marshal(next); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkUpdateOwnRoundTripDecoded(b *testing.B) { benchRoundTrip(b, false) }
func BenchmarkUpdateOwnRoundTripEncoded(b *testing.B) { benchRoundTrip(b, true) }
