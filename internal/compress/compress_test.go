package compress

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"
)

// listOf returns the JSON of a list of n objects alike but for their
// names and a few values, as a list of one kind of custom resource is,
// each with the managedFields of one manager; pad adds that many bytes of
// one letter to each, as the load generator pads its objects.
func listOf(n, pad int) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"bench.crdserver.io/v1","items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"annotations":{"padding":%q},`+
			`"creationTimestamp":"2026-12-01T02:35:%02dZ","generation":1,"labels":{"app.kubernetes.io/instance":"bench-%d","tier":"t%d"},`+
			`"managedFields":[{"apiVersion":"bench.crdserver.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:padding":{}},`+
			`"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:tier":{}}},"f:spec":{".":{},"f:displayName":{},"f:image":{},"f:priority":{},"f:replicas":{},`+
			`"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}}},"f:tags":{}}},"manager":"kubectl-client-side-apply","operation":"Update",`+
			`"time":"2026-12-01T02:35:%02dZ"}],`+
			`"name":"bench-%d","namespace":"default","resourceVersion":"%d","uid":"6f0c%04x-1c2d-4e5f-8a9b-%012x"},`+
			`"spec":{"displayName":"Widget number %d","image":"registry.example.com/widgets/widget:v1.%d","priority":%d,`+
			`"replicas":%d,"resources":{"limits":{"cpu":"500m","memory":"256Mi"}},"tags":["bench","widget","tag-%d"]}}`,
			strings.Repeat("x", pad), i%60, i, i%3, i%60, i, 1000+i, i%65536, i*7919, i, i%20, i%201-100, i%100, i%13)
	}
	b.WriteString(`],"kind":"WidgetList","metadata":{"resourceVersion":"20000"}}`)
	return []byte(b.String())
}

// BenchmarkGzip compresses lists of 10,000 objects at level 1 as answers
// are compressed (in writes of 32 KB), with this package's Writer and,
// for comparison, the standard library's.
func BenchmarkGzip(b *testing.B) {
	for _, pad := range []int{0, 1024} {
		list := listOf(10000, pad)
		for _, w := range []struct {
			name string
			new  func() (io.WriteCloser, func(io.Writer))
		}{
			{"klauspost", func() (io.WriteCloser, func(io.Writer)) {
				gw := Take()
				if gw == nil {
					b.Fatal("no compressor free")
				}
				b.Cleanup(func() { Put(gw) })
				return gw, func(w io.Writer) { Reset(gw, w) }
			}},
			{"stdlib", func() (io.WriteCloser, func(io.Writer)) {
				gw, _ := stdgzip.NewWriterLevel(nil, stdgzip.BestSpeed)
				return gw, gw.Reset
			}},
		} {
			b.Run(fmt.Sprintf("%s/pad=%d", w.name, pad), func(b *testing.B) {
				gw, reset := w.new()
				var out countingWriter
				b.SetBytes(int64(len(list)))
				for b.Loop() {
					out = 0
					reset(&out)
					for i := 0; i < len(list); i += 32 << 10 {
						gw.Write(list[i:min(len(list), i+32<<10)])
					}
					gw.Close()
				}
				b.ReportMetric(float64(out), "gzipped-bytes")
			})
		}
	}
}

// TestResetHeader: an answer's gzip header carries no time stamp (MTIME
// 0), as the standard library writes it, however often its compressor
// was used before.
func TestResetHeader(t *testing.T) {
	gw := Take()
	defer Put(gw)
	for i := range 2 {
		var out bytes.Buffer
		Reset(gw, &out)
		gw.Write([]byte(`{"kind":"List"}`))
		gw.Close()
		mtime := bytes.Clone(out.Bytes()[4:8])
		r, err := stdgzip.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Header.ModTime.IsZero() || !bytes.Equal(mtime, []byte{0, 0, 0, 0}) {
			t.Errorf("answer %d: gzip header time %v (MTIME %v), want none", i, r.Header.ModTime, mtime)
		}
		if body, err := io.ReadAll(r); err != nil || string(body) != `{"kind":"List"}` {
			t.Errorf("answer %d: %q, %v", i, body, err)
		}
	}
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
