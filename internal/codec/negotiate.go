package codec

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MediaProtobuf is Kubernetes' protobuf encoding, which built-ins with Go
// types are also written in.
const MediaProtobuf = "application/vnd.kubernetes.protobuf"

// MediaType is the negotiated form of a response.
type MediaType struct {
	// Type is MediaJSON, MediaYAML or (see NegotiateProtobuf)
	// MediaProtobuf.
	Type string
	// As, Group and Version name a conversion the client asked for
	// (as=Table;g=meta.k8s.io;v=v1); all empty for the plain object.
	As      string
	Group   string
	Version string
	// Stream is the stream parameter ("watch") when given.
	Stream string
	// Pretty asks for indented JSON: pretty=1 in the Accept clause, or
	// what PrettyRequested finds in the request.
	Pretty bool
}

// PrettyRequested reports whether upstream indents a JSON answer to r
// whatever its Accept says: ?pretty= when it parses as a bool
// (strconv.ParseBool: true, 1, t...; anything else, "yes" too, is false),
// and when it is absent or empty, a User-Agent that starts with "curl",
// "Wget" or "Mozilla/5.0" (command-line tools and browsers). It costs no
// allocation unless the query names pretty.
func PrettyRequested(r *http.Request) bool {
	if r.URL != nil && strings.Contains(r.URL.RawQuery, "pretty") {
		if v := r.URL.Query().Get("pretty"); v != "" {
			pretty, _ := strconv.ParseBool(v)
			return pretty
		}
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// JSON is the media type of a request that expressed no preference.
var JSON = MediaType{Type: MediaJSON}

// acceptedOutput is what a 406 says the server writes: upstream's words,
// protobuf included, for custom resources (which have no protobuf form)
// as well.
var acceptedOutput = []string{MediaJSON, MediaYAML, MediaProtobuf}

// Negotiate picks the response form for a resource endpoint from an Accept
// header: the plain object, or its Table, PartialObjectMetadata or
// PartialObjectMetadataList form in meta.k8s.io/v1 or v1beta1, the
// metadata forms of v1 in protobuf too. See NegotiateFor.
func Negotiate(accept string) (MediaType, error) {
	return negotiate(accept, ResourceTargets, metadataProtobuf)
}

// NegotiateFor picks the response form from an Accept header as upstream
// does: clauses in order of q, then specificity; the first clause whose
// type is JSON or YAML (or a wildcard) and whose conversion allow accepts
// wins. An empty header is plain JSON. Clauses for types we do not write
// (protobuf, CBOR) are skipped. When no clause fits, the error is upstream's
// 406 NotAcceptable.
func NegotiateFor(accept string, allow func(MediaType) bool) (MediaType, error) {
	return negotiate(accept, allow, nil)
}

// NegotiateProtobuf is Negotiate for a built-in with a protobuf form: a
// clause for protobuf wins like one for JSON, as the plain object or a
// watch stream, or in the metadata forms Negotiate offers it for
// (protobuf has no Table form here).
func NegotiateProtobuf(accept string) (MediaType, error) {
	return negotiate(accept, ResourceTargets, func(mt MediaType) bool {
		return mt.As == "" && mt.Group == "" && mt.Version == "" || metadataProtobuf(mt)
	})
}

// metadataProtobuf reports whether mt is a metadata form upstream writes in
// protobuf for every resource, custom ones included: PartialObjectMetadata
// and PartialObjectMetadataList in meta.k8s.io/v1, which client-go's
// metadata client (garbage collectors, metadata informers) asks for first.
func metadataProtobuf(mt MediaType) bool {
	return mt.Group == metav1.GroupName && mt.Version == "v1" &&
		(mt.As == "PartialObjectMetadata" || mt.As == "PartialObjectMetadataList")
}

// negotiate is NegotiateFor; a protobuf clause may win too where protobuf
// (nil for none) accepts its form.
func negotiate(accept string, allow func(MediaType) bool, protobuf func(MediaType) bool) (MediaType, error) {
	if accept == "" {
		return JSON, nil
	}
	for _, c := range cachedAccept(accept) {
		var typ string
		switch {
		case protobuf != nil && c.Type == "application" && c.SubType == "vnd.kubernetes.protobuf":
			typ = MediaProtobuf
		case c.Covers("application", "json"):
			typ = MediaJSON
		case c.Type == "application" && c.SubType == "yaml":
			typ = MediaYAML
		default:
			continue
		}
		mt := MediaType{Type: typ}
		ok := true
		for _, p := range c.Params {
			switch p.Key {
			case "as":
				mt.As = p.Value
			case "g":
				mt.Group = p.Value
			case "v":
				mt.Version = p.Value
			case "stream":
				// JSON and protobuf have a stream form; a YAML watch is
				// not acceptable.
				if p.Value != "" && (p.Value != "watch" || typ == MediaYAML) {
					ok = false
				}
				mt.Stream = p.Value
			case "pretty":
				mt.Pretty = p.Value == "1"
			}
			// Other parameters (charset, sv, export, profile) are ignored.
		}
		if typ == MediaProtobuf && !protobuf(mt) {
			ok = false
		}
		if ok && allow(mt) {
			return mt, nil
		}
	}
	return MediaType{}, NotAcceptable()
}

// RouteNotAcceptable is the 406 of upstream's REST router, which serves the
// built-ins with Go types: it answers it before the handler negotiates
// (see RouteAccepts) for the route's media types, JSON, YAML and protobuf;
// lists and watches also name their stream types.
func RouteNotAcceptable(accept string, list bool) error {
	if list {
		return RouteAccepts(accept, routeListTypes)
	}
	return RouteAccepts(accept, RouteTypes)
}

// RouteTypes are the media types of upstream's REST routes for objects
// and discovery documents.
var RouteTypes = []string{MediaJSON, MediaYAML, MediaProtobuf}

var routeListTypes = append(slices.Clip(RouteTypes), MediaJSON+";stream=watch", MediaProtobuf+";stream=watch")

// RouteAccepts is the check of upstream's REST router (go-restful) before
// a route's handler runs: nil when accept is empty or one of its media
// ranges, its parameters cut off, is exactly "*/*" or one of produces,
// and otherwise the router's 406 listing produces. It knows no other
// wildcard: "application/*" is not acceptable. Parameters of produces
// never match (a range is compared without its own).
func RouteAccepts(accept string, produces []string) error {
	if accept == "" {
		return nil
	}
	for mediaRange := range strings.SplitSeq(accept, ",") {
		mediaRange, _, _ = strings.Cut(mediaRange, ";")
		mediaRange = strings.Trim(mediaRange, " ")
		if mediaRange == "*/*" || slices.Contains(produces, mediaRange) {
			return nil
		}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "406: Not Acceptable\n\nAvailable representations: " + strings.Join(produces, ", "),
		Details: &metav1.StatusDetails{},
	}}
}

// NotAcceptable is upstream's 406 for an Accept header the server cannot
// satisfy.
func NotAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(acceptedOutput, ", "),
	}}
}

// ResourceTargets is the set of conversions a resource endpoint serves: none,
// or Table/PartialObjectMetadata/PartialObjectMetadataList in meta.k8s.io v1
// or v1beta1. A clause with any of as/g/v set must name one of them.
func ResourceTargets(mt MediaType) bool {
	if mt.As == "" && mt.Group == "" && mt.Version == "" {
		return true
	}
	if mt.Group != metav1.GroupName || (mt.Version != "v1" && mt.Version != "v1beta1") {
		return false
	}
	switch mt.As {
	case "Table", "PartialObjectMetadata", "PartialObjectMetadataList":
		return true
	}
	return false
}

// PlainOnly allows no conversion (discovery documents without the
// aggregated form, /version, OpenAPI).
func PlainOnly(mt MediaType) bool { return mt.As == "" && mt.Group == "" && mt.Version == "" }

// AggregatedDiscoveryOnly allows the aggregated discovery form alone,
// apidiscovery.k8s.io/v2 APIGroupDiscoveryList.
func AggregatedDiscoveryOnly(mt MediaType) bool {
	return mt.As == "APIGroupDiscoveryList" && mt.Group == "apidiscovery.k8s.io" && mt.Version == "v2"
}

// NegotiateDocument is NegotiateFor for a document that has a protobuf
// form in each form allow accepts (discovery's).
func NegotiateDocument(accept string, allow func(MediaType) bool) (MediaType, error) {
	return negotiate(accept, allow, allow)
}

// NegotiateOffer picks the first of offers (plain media types, compared
// case-sensitively) that the best clause of accept matches, as goautoneg's
// Negotiate does for handlers that serve fixed types (kube-openapi's):
// clauses in order of quality, a zero quality included, their parameters
// ignored. An empty accept takes the first offer.
func NegotiateOffer(accept string, offers []string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return offers[0], true
	}
	for _, c := range cachedAccept(accept) {
		for _, o := range offers {
			typ, sub, _ := strings.Cut(o, "/")
			if (c.Type == "*" || c.Type == typ) && (c.SubType == "*" || c.SubType == sub) {
				return o, true
			}
		}
	}
	return "", false
}

// acceptCache holds parsed Accept headers. Clients send the same few
// headers over and over; parsing one costs more than the rest of a get
// from the watch cache. It stops growing at maxCachedAccepts, so headers
// made up per request are parsed each time instead of filling memory.
var (
	acceptCache      sync.Map // string → []AcceptClause, never modified
	acceptCacheSize  atomic.Int32
	maxCachedAccepts = int32(256)
)

func cachedAccept(header string) []AcceptClause {
	if v, ok := acceptCache.Load(header); ok {
		return v.([]AcceptClause)
	}
	clauses := parseAccept(header)
	if len(header) <= 1024 && acceptCacheSize.Load() < maxCachedAccepts {
		if _, loaded := acceptCache.LoadOrStore(header, clauses); !loaded {
			acceptCacheSize.Add(1)
		}
	}
	return clauses
}

// AcceptParam is one parameter of an Accept clause.
type AcceptParam struct{ Key, Value string }

// AcceptClause is one media range of an Accept header: its type and
// subtype ("*" for a wildcard) and its parameters in the order given, q
// left out.
type AcceptClause struct {
	Type, SubType string
	Params        []AcceptParam
	q             float64
}

// Covers reports whether the clause's media range includes typ/sub: the
// same type, or a wildcard for the subtype or both, as upstream matches
// a clause against the media types it writes.
func (c AcceptClause) Covers(typ, sub string) bool {
	return c.Type == "*" && c.SubType == "*" || c.Type == typ && (c.SubType == sub || c.SubType == "*")
}

// AcceptClauses returns the clauses of an Accept header in the order
// upstream tries them (see parseAccept), for an endpoint that negotiates
// media types of its own. The slice is shared: callers must not modify
// it.
func AcceptClauses(header string) []AcceptClause { return cachedAccept(header) }

// parseAccept splits an Accept header the way upstream's goautoneg does:
// malformed clauses are dropped, q orders the rest (q=0 is not excluded),
// and among equal q a concrete type sorts before a wildcard.
func parseAccept(header string) []AcceptClause {
	var out []AcceptClause
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		mediaRange, rest, _ := strings.Cut(part, ";")
		typ, sub, hasSlash := strings.Cut(mediaRange, "/")
		c := AcceptClause{Type: strings.TrimSpace(typ), q: 1}
		switch {
		case !hasSlash && c.Type == "*":
			c.SubType = "*"
		case !hasSlash, strings.Contains(sub, "/"):
			continue
		default:
			c.SubType = strings.TrimSpace(sub)
		}
		for rest != "" {
			var kv string
			kv, rest, _ = strings.Cut(rest, ";")
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.Contains(v, "=") {
				continue
			}
			k = strings.TrimSpace(k)
			if k == "q" {
				q, _ := strconv.ParseFloat(v, 32)
				c.q = q
				continue
			}
			c.Params = append(c.Params, AcceptParam{k, strings.TrimSpace(v)})
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.q != b.q {
			return a.q > b.q
		}
		if a.Type != "*" && b.Type == "*" {
			return true
		}
		return a.SubType != "*" && b.SubType == "*"
	})
	return out
}
