package codec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAcceptCacheIsBounded(t *testing.T) {
	for i := range 2 * int(maxCachedAccepts) {
		if _, err := Negotiate(fmt.Sprintf("application/json;x=%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := acceptCacheSize.Load(); n > maxCachedAccepts {
		t.Fatalf("cache holds %d headers, bound is %d", n, maxCachedAccepts)
	}
}

func TestNegotiate(t *testing.T) {
	table := func(v string) MediaType {
		return MediaType{Type: MediaJSON, As: "Table", Group: "meta.k8s.io", Version: v}
	}
	cases := []struct {
		accept string
		want   MediaType
		err    bool
	}{
		{"", JSON, false},
		{"*/*", JSON, false},
		{"*", JSON, false},
		{"application/*", JSON, false},
		{"application/json", JSON, false},
		{"application/json, */*", JSON, false},
		{"application/yaml", MediaType{Type: MediaYAML}, false},
		{"application/json;pretty=1", MediaType{Type: MediaJSON, Pretty: true}, false},
		{"application/json;charset=utf-8", JSON, false},
		{"application/json;stream=watch", MediaType{Type: MediaJSON, Stream: "watch"}, false},
		{"application/vnd.kubernetes.protobuf,application/json", JSON, false},
		{"application/vnd.kubernetes.protobuf;stream=watch,application/json", JSON, false},
		{"application/yaml;q=0.5,application/json", JSON, false},
		{"application/yaml,application/json;q=0.9", MediaType{Type: MediaYAML}, false},
		{"*/*,application/yaml", MediaType{Type: MediaYAML}, false}, // concrete before wildcard at equal q
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", table("v1"), false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", table("v1beta1"), false},
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io", MediaType{Type: MediaYAML, As: "Table", Group: "meta.k8s.io", Version: "v1"}, false},
		// The metadata client's: upstream answers every resource's
		// metadata forms in protobuf.
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
			MediaType{Type: MediaProtobuf, As: "PartialObjectMetadataList", Group: "meta.k8s.io", Version: "v1"}, false},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
			MediaType{Type: MediaProtobuf, As: "PartialObjectMetadata", Group: "meta.k8s.io", Version: "v1"}, false},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
			MediaType{Type: MediaJSON, As: "PartialObjectMetadataList", Group: "meta.k8s.io", Version: "v1beta1"}, false},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json", JSON, false},
		{"application/vnd.kubernetes.protobuf", MediaType{}, true},                     // the plain object: only built-ins with Go types
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/json", JSON, false}, // unknown version: next clause
		{"application/json;as=Widget;v=v1;g=meta.k8s.io,application/yaml", MediaType{Type: MediaYAML}, false},
		{"application/json;v=v1", MediaType{}, true}, // a partial conversion is no conversion we serve
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", JSON, false},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", MediaType{}, true},
		{"application/yaml;stream=watch", MediaType{}, true},
		{"application/vnd.kubernetes.protobuf", MediaType{}, true},
		{"text/html", MediaType{}, true},
		{"application", MediaType{}, true},
		{"a/b/c", MediaType{}, true},
	}
	// Twice: the second pass answers from the parsed-header cache.
	for _, tc := range append(cases, cases...) {
		got, err := Negotiate(tc.accept)
		if tc.err {
			if err == nil {
				t.Errorf("Negotiate(%q) = %+v, want 406", tc.accept, got)
				continue
			}
			st := statusOf(t, err)
			if st.Code != http.StatusNotAcceptable || st.Reason != metav1.StatusReasonNotAcceptable ||
				st.Message != "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" {
				t.Errorf("Negotiate(%q): %+v", tc.accept, st)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Negotiate(%q) = %+v, %v; want %+v", tc.accept, got, err, tc.want)
		}
	}
	// The aggregated clause is found whatever its quality, in protobuf too.
	disc := "application/json,application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"
	got, err := NegotiateDocument(disc, AggregatedDiscoveryOnly)
	if err != nil || got.As != "APIGroupDiscoveryList" || got.Type != MediaProtobuf {
		t.Errorf("discovery: %+v, %v", got, err)
	}
	if got, _ := NegotiateDocument(disc, PlainOnly); got != JSON {
		t.Errorf("plain only: %+v", got)
	}
	if _, err := NegotiateDocument("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", AggregatedDiscoveryOnly); err == nil {
		t.Errorf("v2beta1 negotiated")
	}
}

func TestWriteObject(t *testing.T) {
	obj := map[string]any{"kind": "Widget", "spec": map[string]any{"a": "<b>", "size": int64(3)}}
	for _, tc := range []struct {
		mt    MediaType
		ctype string
		body  string
	}{
		{JSON, "application/json", `{"kind":"Widget","spec":{"a":"\u003cb\u003e","size":3}}` + "\n"},
		// Indented as upstream's MarshalIndent: no final newline.
		{MediaType{Type: MediaJSON, Pretty: true}, "application/json", "{\n  \"kind\": \"Widget\",\n  \"spec\": {\n    \"a\": \"\\u003cb\\u003e\",\n    \"size\": 3\n  }\n}"},
		{MediaType{Type: MediaYAML, Pretty: true}, "application/yaml", "kind: Widget\nspec:\n  a: <b>\n  size: 3\n"},
		{MediaType{Type: MediaYAML}, "application/yaml", "kind: Widget\nspec:\n  a: <b>\n  size: 3\n"},
	} {
		w := httptest.NewRecorder()
		WriteObject(w, http.StatusCreated, tc.mt, obj)
		if w.Code != 201 || w.Header().Get("Content-Type") != tc.ctype || w.Body.String() != tc.body {
			t.Errorf("%+v: %d %q %q", tc.mt, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
	w := httptest.NewRecorder()
	WriteRaw(w, 200, MediaType{Type: MediaYAML}, []byte(`{"a":[1,2]}`))
	if w.Body.String() != "a:\n- 1\n- 2\n" {
		t.Errorf("raw yaml: %q", w.Body.String())
	}
}

func TestPrettyRequested(t *testing.T) {
	for _, tc := range []struct {
		line         int
		query, agent string
		want         bool
	}{
		{line(), "", "", false},
		{line(), "", "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef", false},
		{line(), "", "Go-http-client/2.0", false},
		{line(), "", "curl/8.5.0", true},
		{line(), "", "curly", true}, // a prefix, as upstream
		{line(), "", "Wget/1.21.4", true},
		{line(), "", "wget/1.21.4", false},
		{line(), "", "Mozilla/5.0 (X11; Linux x86_64)", true},
		{line(), "", "Mozilla/4.0", false},
		{line(), "pretty=true", "", true},
		{line(), "pretty=1", "", true},
		{line(), "pretty=T", "", true},
		{line(), "pretty=false", "curl/8.5.0", false},
		{line(), "pretty=0", "Mozilla/5.0", false},
		// Anything else is false, and the User-Agent is not asked.
		{line(), "pretty=yes", "", false},
		{line(), "pretty=yes", "curl/8.5.0", false},
		// Empty or absent: the User-Agent decides.
		{line(), "pretty=", "curl/8.5.0", true},
		{line(), "pretty", "Wget/1.21.4", true},
		{line(), "pretty=", "", false},
		{line(), "prettyx=1", "", false},
		// The first value counts.
		{line(), "pretty=1&pretty=0", "", true},
		{line(), "limit=1&pretty=true", "", true},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces?"+tc.query, nil)
		if tc.agent != "" {
			r.Header.Set("User-Agent", tc.agent)
		}
		if got := PrettyRequested(r); got != tc.want {
			t.Errorf("line %d: ?%s, User-Agent %q: %v, want %v", tc.line, tc.query, tc.agent, got, tc.want)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.Header.Set("User-Agent", "kubectl/v1.37.2")
	if n := testing.AllocsPerRun(100, func() { PrettyRequested(r) }); n != 0 {
		t.Errorf("PrettyRequested allocates %v times without ?pretty", n)
	}
}

// TestWriteStatusPretty: a Status is indented as an object would be, and
// always when no Accept clause can carry it (upstream's WriteRawJSON).
func TestWriteStatusPretty(t *testing.T) {
	indented := "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n" +
		"  \"message\": \"nope \\u003cb\\u003e\",\n  \"reason\": \"BadRequest\",\n  \"code\": 400\n}"
	plain := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope \u003cb\u003e","reason":"BadRequest","code":400}` + "\n"
	for _, tc := range []struct {
		line                 int
		query, agent, accept string
		want                 string
	}{
		{line(), "", "", "", plain},
		{line(), "", "curl/8.5.0", "", indented},
		{line(), "pretty=true", "", "", indented},
		{line(), "pretty=false", "curl/8.5.0", "", plain},
		{line(), "", "", "application/json;pretty=1", indented},
		{line(), "", "", "application/json;as=Table;g=meta.k8s.io;v=v1;pretty=1,application/json", plain},
		{line(), "", "", "text/csv", indented},
		{line(), "pretty=false", "", "application/json;as=Table;g=meta.k8s.io;v=v1", indented},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/x?"+tc.query, nil)
		if tc.agent != "" {
			r.Header.Set("User-Agent", tc.agent)
		}
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		w := httptest.NewRecorder()
		WriteStatus(w, r, apierrors.NewBadRequest("nope <b>"))
		if got := w.Body.String(); got != tc.want || w.Header().Get("Content-Type") != MediaJSON || w.Header().Get("Content-Length") != strconv.Itoa(len(got)) {
			t.Errorf("line %d: %v\n%s", tc.line, w.Header(), got)
		}
	}
}

func TestWriteStatus(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	cases := []struct {
		name    string
		err     error
		accept  string
		code    int
		reason  metav1.StatusReason
		msg     string
		retry   string
		details bool
	}{
		{"not found", apierrors.NewNotFound(gr, "w"), "", 404, metav1.StatusReasonNotFound, `widgets.example.com "w" not found`, "", true},
		{"wrapped status", fmt.Errorf("ctx: %w", apierrors.NewConflict(gr, "w", errors.New("x"))), "", 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on widgets.example.com "w": x`, "", true},
		{"too many", apierrors.NewTooManyRequests("slow down", 3), "", 429, metav1.StatusReasonTooManyRequests, "slow down", "3", true},
		{"plain error hides cause", errors.New("etcd exploded: secret detail"), "", 500, metav1.StatusReasonInternalError,
			"Internal error occurred: an unexpected error occurred; details are in the server log", "", true},
		{"decode error", &DecodeError{Err: errors.New("bad")}, "", 400, metav1.StatusReasonBadRequest, "bad", "", false},
		{"yaml accept", apierrors.NewBadRequest("nope"), "application/yaml", 400, metav1.StatusReasonBadRequest, "nope", "", false},
		{"table accept still a Status", apierrors.NewBadRequest("nope"), "application/json;as=Table;v=v1;g=meta.k8s.io", 400, metav1.StatusReasonBadRequest, "nope", "", false},
		{"protobuf accept", apierrors.NewNotFound(gr, "w"), "application/vnd.kubernetes.protobuf,application/json", 404, metav1.StatusReasonNotFound, `widgets.example.com "w" not found`, "", true},
		{"plain protobuf accept", NotAcceptable(), "application/vnd.kubernetes.protobuf", 406, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", false},
		// Clauses asking for a conversion do not count for a Status.
		{"metadata protobuf accept", apierrors.NewNotFound(gr, "w"), "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", 404, metav1.StatusReasonNotFound, `widgets.example.com "w" not found`, "", true},
		{"table protobuf accept only", NotAcceptable(), "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", 406, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", "", false},
	}
	var logBuf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logBuf, nil)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/apis/example.com/v1/widgets/w", nil)
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			w := httptest.NewRecorder()
			WriteStatus(w, r, tc.err)
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d", w.Code, tc.code)
			}
			if got := w.Header().Get("Retry-After"); got != tc.retry {
				t.Errorf("Retry-After %q, want %q", got, tc.retry)
			}
			var st metav1.Status
			if tc.accept == "application/yaml" {
				if w.Header().Get("Content-Type") != MediaYAML || !strings.Contains(w.Body.String(), "reason: BadRequest") {
					t.Fatalf("yaml status: %q", w.Body.String())
				}
				return
			}
			if strings.HasPrefix(tc.accept, MediaProtobuf) && !strings.Contains(tc.accept, "as=") {
				// As upstream answers a client preferring protobuf.
				if w.Header().Get("Content-Type") != MediaProtobuf {
					t.Fatalf("Content-Type %q, want protobuf", w.Header().Get("Content-Type"))
				}
				payload, ok := ProtobufPayload(w.Body.Bytes())
				var env runtime.Unknown
				if !ok || env.Unmarshal(payload) != nil || env.Kind != "Status" || env.APIVersion != "v1" || st.Unmarshal(env.Raw) != nil {
					t.Fatalf("not an enveloped Status: %q", w.Body.Bytes())
				}
				st.TypeMeta = metav1.TypeMeta{Kind: env.Kind, APIVersion: env.APIVersion}
			} else {
				if w.Header().Get("Content-Type") != MediaJSON {
					t.Errorf("Content-Type %q", w.Header().Get("Content-Type"))
				}
				if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
					t.Fatal(err)
				}
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure ||
				int(st.Code) != tc.code || st.Reason != tc.reason || st.Message != tc.msg || (st.Details != nil) != tc.details {
				t.Errorf("got %+v", st)
			}
			if strings.Contains(w.Body.String(), "secret detail") {
				t.Errorf("internal cause leaked: %s", w.Body.String())
			}
		})
	}
	if !strings.Contains(logBuf.String(), "etcd exploded: secret detail") {
		t.Errorf("internal cause not logged: %q", logBuf.String())
	}
}

// flushRecorder counts flushes.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushRecorder) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func TestWatchEncoder(t *testing.T) {
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	enc := NewWatchEncoder(rec)
	enc.Start()
	if err := enc.Encode(EventAdded, []byte(`{"kind":"Widget","metadata":{"name":"a"}}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(EventBookmark, []byte(`{"kind":"Widget","metadata":{"resourceVersion":"7"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := enc.EncodeError(apierrors.NewResourceExpired("too old resource version: 1 (5)")); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || rec.Header().Get("Content-Type") != MediaJSON {
		t.Fatalf("header: %d %v", rec.Code, rec.Header())
	}
	if rec.flushes != 4 {
		t.Errorf("flushes = %d, want 4 (header + one per event)", rec.flushes)
	}
	sc := bufio.NewScanner(rec.Body)
	var events []metav1.WatchEvent
	for sc.Scan() {
		var ev metav1.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("frame %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	if len(events) != 3 || events[0].Type != "ADDED" || events[1].Type != "BOOKMARK" || events[2].Type != "ERROR" {
		t.Fatalf("events: %+v", events)
	}
	if string(events[0].Object.Raw) != `{"kind":"Widget","metadata":{"name":"a"}}` {
		t.Errorf("object not spliced as is: %s", events[0].Object.Raw)
	}
	var st metav1.Status
	if err := json.Unmarshal(events[2].Object.Raw, &st); err != nil || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Kind != "Status" {
		t.Errorf("error event: %+v %v", st, err)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "creationTimestamp": "2026-01-01T11:54:48Z"},
		"spec":     map[string]any{"size": int64(3)},
	}
	cols := []metav1.TableColumnDefinition{NameColumn, {Name: "Size", Type: "integer"}, AgeColumn}
	row := TableRow{Cells: []any{"w", int64(3), AgeCell("2026-01-01T11:54:48Z", now)}, Object: obj}
	if row.Cells[2] != "5m12s" {
		t.Errorf("age = %v", row.Cells[2])
	}
	rc := int64(2)
	list := metav1.ListMeta{ResourceVersion: "42", Continue: "tok", RemainingItemCount: &rc}

	for _, tc := range []struct {
		mt      MediaType
		include IncludeObject
		wantAV  string
		object  string
	}{
		{MediaType{Type: MediaJSON, As: "Table", Group: "meta.k8s.io", Version: "v1"}, IncludeMetadata, "meta.k8s.io/v1",
			`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"creationTimestamp":"2026-01-01T11:54:48Z","name":"w","namespace":"ns"}}`},
		{MediaType{Type: MediaJSON, As: "Table", Group: "meta.k8s.io", Version: "v1beta1"}, IncludeMetadata, "meta.k8s.io/v1beta1",
			`{"apiVersion":"meta.k8s.io/v1beta1","kind":"PartialObjectMetadata","metadata":{"creationTimestamp":"2026-01-01T11:54:48Z","name":"w","namespace":"ns"}}`},
		{MediaType{Type: MediaJSON, As: "Table", Group: "meta.k8s.io", Version: "v1"}, IncludeFull, "meta.k8s.io/v1",
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"creationTimestamp":"2026-01-01T11:54:48Z","name":"w","namespace":"ns"},"spec":{"size":3}}`},
		{MediaType{Type: MediaJSON, As: "Table", Group: "meta.k8s.io", Version: "v1"}, IncludeNone, "meta.k8s.io/v1", `null`},
	} {
		tbl, err := NewTable(tc.mt, cols, []TableRow{row}, tc.include, list)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(tbl)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Kind, APIVersion  string
			Metadata          map[string]any
			ColumnDefinitions []metav1.TableColumnDefinition
			Rows              []struct {
				Cells  []any
				Object json.RawMessage
			}
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Kind != "Table" || back.APIVersion != tc.wantAV {
			t.Errorf("%s: kind %s %s", tc.include, back.Kind, back.APIVersion)
		}
		if !reflect.DeepEqual(back.Metadata, map[string]any{"resourceVersion": "42", "continue": "tok", "remainingItemCount": 2.0}) {
			t.Errorf("%s: metadata %v", tc.include, back.Metadata)
		}
		if len(back.ColumnDefinitions) != 3 || back.ColumnDefinitions[2].Name != "Age" || back.ColumnDefinitions[2].Type != "date" {
			t.Errorf("%s: columns %+v", tc.include, back.ColumnDefinitions)
		}
		if len(back.Rows) != 1 || !reflect.DeepEqual(back.Rows[0].Cells, []any{"w", 3.0, "5m12s"}) || string(back.Rows[0].Object) != tc.object {
			t.Errorf("%s: rows %s", tc.include, b)
		}
	}
	if _, err := ParseIncludeObject("Bogus"); err == nil || statusOf(t, err).Message != `unrecognized includeObject value: "Bogus"` {
		t.Errorf("ParseIncludeObject(Bogus): %v", err)
	}
	if inc, err := ParseIncludeObject(""); err != nil || inc != IncludeMetadata {
		t.Errorf("ParseIncludeObject(\"\") = %v, %v", inc, err)
	}
}

func TestAgeCell(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for ts, want := range map[string]string{
		"":                     "<unknown>",
		"garbage":              "<invalid>",
		"2026-01-09T23:59:30Z": "30s",
		"2026-01-09T22:00:00Z": "120m",
		"2026-01-07T00:00:00Z": "3d",
		"2026-01-10T00:00:05Z": "<invalid>", // in the future
	} {
		if got := AgeCell(ts, now); got != want {
			t.Errorf("AgeCell(%q) = %q, want %q", ts, got, want)
		}
	}
}

func TestPartialObjectMetadataList(t *testing.T) {
	objs := []map[string]any{
		{"kind": "Widget", "metadata": map[string]any{"name": "a"}},
		{"kind": "Widget"},
	}
	got := PartialObjectMetadataList(objs, "", metav1.ListMeta{ResourceVersion: "9"})
	b, _ := json.Marshal(got)
	want := `{"apiVersion":"meta.k8s.io/v1","items":[{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a"}},` +
		`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{}}],"kind":"PartialObjectMetadataList","metadata":{"resourceVersion":"9"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestNotFound(t *testing.T) {
	w := httptest.NewRecorder()
	WriteStatus(w, httptest.NewRequest("GET", "/apis/nope/v1/x", nil), NotFound())
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}` + "\n"
	if w.Code != 404 || w.Body.String() != want {
		t.Fatalf("got %d %s", w.Code, w.Body.String())
	}
}

// NegotiateProtobuf picks protobuf for the plain object and its watch
// stream only; Negotiate never does.
func TestNegotiateProtobuf(t *testing.T) {
	for _, tc := range []struct {
		accept, want string
		stream       string
	}{
		{accept: "application/vnd.kubernetes.protobuf", want: MediaProtobuf},
		{accept: "application/vnd.kubernetes.protobuf, application/json", want: MediaProtobuf},
		{accept: "application/vnd.kubernetes.protobuf;stream=watch", want: MediaProtobuf, stream: "watch"},
		{accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", want: MediaJSON},
		{accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"},
		{accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io;stream=watch", want: MediaProtobuf, stream: "watch"},
	} {
		got, err := NegotiateProtobuf(tc.accept)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: %+v, want 406", tc.accept, got)
			}
			continue
		}
		if err != nil || got.Type != tc.want || got.Stream != tc.stream {
			t.Errorf("%q: %+v, %v; want %s stream %q", tc.accept, got, err, tc.want, tc.stream)
		}
		if got, err := Negotiate(tc.accept); err == nil && got.Type == MediaProtobuf && got.As == "" {
			t.Errorf("Negotiate(%q) chose protobuf for the plain object", tc.accept)
		}
	}
}

// The REST router's 406 comes only when no clause names a type it writes.
func TestRouteNotAcceptable(t *testing.T) {
	for _, tc := range []struct {
		accept string
		list   bool
		want   string
	}{
		{accept: "application/json"},
		{accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"},
		{accept: "*/*"},
		{accept: "text/csv", want: "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{accept: "text/csv", list: true, want: "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"},
	} {
		err := RouteNotAcceptable(tc.accept, tc.list)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v, want none", tc.accept, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q (list %v): %v, want %q", tc.accept, tc.list, err, tc.want)
		}
	}
}
