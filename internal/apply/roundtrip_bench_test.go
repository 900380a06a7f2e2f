package apply

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/codec"
)

// benchRoundTrip is BenchmarkUpdateOwn with what the handler does around
// it: decode the stored object (keeping its managedFields encoded when
// raw), record the update, encode the result for storage.
func benchRoundTrip(b *testing.B, raw bool) {
	m, live := benchWidgets(b)
	enc, _ := codec.Marshal(live)
	change := func(o map[string]any, n int64) map[string]any {
		next := runtime.DeepCopyJSON(o)
		delete(next["metadata"].(map[string]any), "managedFields")
		next["metadata"].(map[string]any)["annotations"].(map[string]any)["bench.crdserver.io/seq"] = fmt.Sprint(n)
		next["spec"].(map[string]any)["replicas"] = n
		return next
	}
	batch := make([]map[string]any, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(batch) == 0 {
			b.StopTimer()
			for j := range batch {
				batch[j] = change(live, int64(j+2))
			}
			b.StartTimer()
		}
		old, _, err := codec.Decode(enc, "", codec.DecodeOptions{RawManagedFields: raw})
		if err != nil {
			b.Fatal(err)
		}
		next := batch[i%len(batch)]
		m.Update(old, next, "creator")
		if _, err := codec.Marshal(next); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkUpdateOwnRoundTripDecoded(b *testing.B) { benchRoundTrip(b, false) }
func BenchmarkUpdateOwnRoundTripEncoded(b *testing.B) { benchRoundTrip(b, true) }
