package loadgen

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

var sampleReport = &Report{
	Server: "https://127.0.0.1:6443", Resource: "widgets", ObjectSize: 2048, Concurrency: 10, Count: 1000, Watchers: 10,
	Results: []Result{
		{Name: "create", Elapsed: 2 * time.Second, Summary: Summary{Ops: 1000, P50: 1500 * time.Microsecond, P90: 3 * time.Millisecond, P99: 9 * time.Millisecond, Max: 21 * time.Millisecond}},
		{Name: "watch", Elapsed: time.Second, Summary: Summary{Ops: 9990, Errors: 10, P50: 2 * time.Millisecond, P90: 4 * time.Millisecond, P99: 8 * time.Millisecond, Max: 12 * time.Millisecond, FirstError: "10 of 10000 events not delivered within 30s"}},
	},
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, sampleReport); err != nil {
		t.Fatal(err)
	}
	want := `server=https://127.0.0.1:6443 resource=widgets objectSize=2048B concurrency=10 count=1000 watchers=10 client=raw
WORKLOAD           OPS  ERRORS      OPS/S        P50        P90        P99        MAX
create            1000       0      500.0    1.500ms    3.000ms    9.000ms   21.000ms
watch             9990      10     9990.0    2.000ms    4.000ms    8.000ms   12.000ms
watch: 10 errors; first: 10 of 10000 events not delivered within 30s
`
	if got := buf.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleReport); err != nil {
		t.Fatal(err)
	}
	var got jsonReport
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	if len(got.Results) != 2 || got.Server != sampleReport.Server || got.Count != 1000 {
		t.Fatalf("unexpected report: %+v", got)
	}
	want := jsonResult{Workload: "create", Ops: 1000, ElapsedSeconds: 2, OpsPerSecond: 500, P50Ms: 1.5, P90Ms: 3, P99Ms: 9, MaxMs: 21}
	if got.Results[0] != want {
		t.Errorf("create result = %+v\nwant %+v", got.Results[0], want)
	}
	if got.Results[1].Errors != 10 || got.Results[1].FirstError == "" {
		t.Errorf("watch result = %+v", got.Results[1])
	}
}

func TestReportRate(t *testing.T) {
	r := *sampleReport
	r.Rate = 250
	var table, js bytes.Buffer
	if err := WriteTable(&table, &r); err != nil {
		t.Fatal(err)
	}
	if want := "count=1000 rate=250/s watchers=10"; !bytes.Contains(table.Bytes(), []byte(want)) {
		t.Errorf("table header lacks %q:\n%s", want, table.String())
	}
	if err := WriteJSON(&js, &r); err != nil {
		t.Fatal(err)
	}
	var got jsonReport
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Rate != 250 {
		t.Errorf("JSON rate = %v (err %v), want 250", got.Rate, err)
	}
}

func TestReportWatchAs(t *testing.T) {
	for _, tt := range []struct {
		watchAs, header, json string
	}{
		{watchAs: "", header: "watchers=10 client=raw"},
		{watchAs: WatchAsJSON, header: "watchers=10 client=raw"},
		{watchAs: WatchAsMetadataProtobuf, header: "watchers=10 watchAs=metadata-protobuf client=raw", json: WatchAsMetadataProtobuf},
	} {
		r := *sampleReport
		r.WatchAs = tt.watchAs
		var table, js bytes.Buffer
		if err := WriteTable(&table, &r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(table.Bytes(), []byte(tt.header)) {
			t.Errorf("watchAs %q: table header lacks %q:\n%s", tt.watchAs, tt.header, table.String())
		}
		if err := WriteJSON(&js, &r); err != nil {
			t.Fatal(err)
		}
		var got jsonReport
		if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.WatchAs != tt.json {
			t.Errorf("watchAs %q: JSON watchAs = %q (err %v), want %q", tt.watchAs, got.WatchAs, err, tt.json)
		}
	}
}
