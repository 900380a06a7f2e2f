// Package handler is the one generic resource handler: every verb on every
// resource, built-in or custom, goes through the functions in this package,
// one file per verb. Each write reads as the steps of the request path in
// order (DESIGN.md).
package handler

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/forward"
	"github.com/crdserver/crdserver/internal/metrics"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// Store is where one resource's objects live: the storage backend, the
// resource's key prefix and its watch cache.
type Store struct {
	Storage storage.Interface
	Cache   *watchcache.Cache
	// Prefix is the resource's key prefix, ending in "/".
	Prefix string
}

// Key returns the storage key of an object.
func (s *Store) Key(namespace, name string) string {
	if namespace == "" {
		return s.Prefix + name
	}
	return s.Prefix + namespace + "/" + name
}

// ListPrefix returns the key prefix of a namespace's objects ("" = all).
func (s *Store) ListPrefix(namespace string) string {
	if namespace == "" {
		return s.Prefix
	}
	return s.Prefix + namespace + "/"
}

// Stores finds the store of a resource. The server owns the stores; the
// registry says which resources exist.
type Stores interface {
	Store(gr schema.GroupResource) (*Store, bool)
}

// Clock is the time source for timestamps (tests inject one).
type Clock func() time.Time

// Handler serves resource requests. It is safe for concurrent use.
type Handler struct {
	reg    *registry.Registry
	stores Stores
	now    Clock
	log    *slog.Logger
	admit  Admitter
	quota  QuotaCharger
	authz  authz.Authorizer
	// metrics counts watch events; nil counts nothing.
	metrics *metrics.Metrics
	// proxyTransport reaches the backends of proxy subresources.
	proxyTransport http.RoundTripper

	// printers caches compiled printer columns per served version, and
	// those of its Scale.
	printers sync.Map // *registry.Version or scaleColumns → *printer
	// recent keeps the protobuf objects of the latest watch events,
	// shared by their watchers.
	recent recentObjects

	// stopWatches is closed at shutdown to end every watch and every
	// proxied request.
	stopWatches chan struct{}
	stopOnce    sync.Once
}

// StopWatches ends every open watch and proxied request, and lets the
// proxies' idle connections go (graceful shutdown: watches, and a
// backend's stream or upgraded connection, never end by themselves).
func (h *Handler) StopWatches() {
	h.stopOnce.Do(func() { close(h.stopWatches) })
	if t, ok := h.proxyTransport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// Config builds a Handler.
type Config struct {
	Registry *registry.Registry
	Stores   Stores
	Clock    Clock // default time.Now
	Logger   *slog.Logger
	// Admission admits writes; nil admits everything.
	Admission Admitter
	// Quota charges creates to ResourceQuotas; nil charges nothing.
	Quota QuotaCharger
	// Authorizer decides whether a write that creates what it found
	// missing (a server-side apply, or a PUT where the resource allows
	// it) may create; nil allows it.
	Authorizer authz.Authorizer
	// Metrics counts the events sent to watches; nil counts nothing.
	Metrics *metrics.Metrics
	// ProxyTransport reaches the backends of proxy subresources
	// (services/proxy); nil is forward.NewTransport's.
	ProxyTransport http.RoundTripper
}

// New returns a Handler.
func New(c Config) *Handler {
	h := &Handler{reg: c.Registry, stores: c.Stores, now: c.Clock, log: c.Logger, admit: c.Admission, quota: c.Quota, authz: c.Authorizer, metrics: c.Metrics, stopWatches: make(chan struct{})}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.proxyTransport = c.ProxyTransport
	if h.proxyTransport == nil {
		h.proxyTransport = forward.NewTransport()
	}
	return h
}

// call is one request after routing: everything the verb functions need.
type call struct {
	w       http.ResponseWriter
	r       *http.Request
	info    *request.Info
	def     *registry.Definition
	version *registry.Version
	store   *Store
	// peers are the other definitions served from def's storage
	// (registry.Table.SharingStorage): nil for most.
	peers []*registry.Definition
	// table is the snapshot the request was routed with.
	table *registry.Table
	media codec.MediaType
	// present, when set, turns the object into what the subresource
	// answers with (the scale subresource's Scale).
	present func(obj map[string]any) (map[string]any, error)
	// presentPrinter renders what present returns as Table rows.
	presentPrinter *printer
	// warnings are the answer's Warning headers so far (addWarning).
	warnings *warningRecorder
	// tableHeadersSent is set once a watch sent a Table: as upstream's,
	// later ones leave out the column definitions.
	tableHeadersSent bool
	// bodyPruned is set once the request's object has been pruned with
	// the version's schema (while decoding it, or patching): the schema
	// steps need not walk it again.
	bodyPruned bool
	// applied is set once a server-side apply merged the request's
	// object: the merge recorded its managedFields.
	applied bool
	// mergesOnly says the write's mutation merges a patch into a copy of
	// the current object and reads nothing of its managedFields, which it
	// replaces whole if the patch names them (see mergePatch): they may
	// stay encoded.
	mergesOnly bool
	// applies says the write is a server-side apply, whose field manager
	// reads the current object's managedFields encoded or not.
	applies bool
	// written describes the managedFields entries recordFields last
	// recorded encoded (nil when it did not): metadata checks take them
	// from it while the object still holds them.
	written *apply.Written
	// createMissing, when set, creates the object a write found missing
	// (server-side apply creates what it applies to).
	createMissing func() error
}

// gvk returns the kind in the request's version.
func (c *call) apiVersion() string {
	if c.def.Group == "" {
		return c.version.Name
	}
	return c.def.Group + "/" + c.version.Name
}

// conv converts between the request's version and the definition's others.
func (c *call) conv() conversion.Request {
	return conversion.Request{Def: c.def, Version: c.version.Name}
}

func (c *call) gr() schema.GroupResource { return c.def.GroupResource() }

// ServeHTTP routes a resource request to its verb.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		codec.WriteStatus(w, r, codec.NotFound())
		return
	}
	c, err := h.route(w, r, info)
	if err != nil {
		writeError(w, r, err)
		return
	}
	serve := verbOf(c)
	if serve == nil {
		codec.WriteStatus(w, r, unknownSubresource(c))
		return
	}
	if c.version.Deprecated && routed(c) {
		// Only a request something serves: upstream warns in each
		// route's handler, and a subresource without one has no route.
		h.deprecatedRequested(c)
	}
	serve(h, c)
}

// verbOf returns what serves c's subresource (the resource itself when
// none), nil when the version has no such subresource for c's verb.
func verbOf(c *call) func(*Handler, *call) {
	sub := c.info.Subresource
	switch {
	case sub == "":
		return (*Handler).serveMain
	case sub == "status" && c.version.Subresources.Status:
		return (*Handler).serveStatus
	case sub == "scale" && c.version.Subresources.Scale != nil:
		return (*Handler).serveScale
	}
	if px, ok := proxier(c); ok {
		return func(h *Handler, c *call) { h.proxy(c, px) }
	}
	if !servesOther(c) {
		return nil
	}
	// A built-in subresource (certificatesigningrequests/approval): it
	// reads as the whole object; a PUT or patch writes the whole object,
	// of which the subresource keeps what it may change as the write is
	// prepared (see prepareUpdate).
	su, updates := c.def.Hooks.(registry.SubresourceUpdater)
	updates = updates && su.Updates(sub)
	sc, creates := c.def.Hooks.(registry.SubresourceCreator)
	if cn, ok := c.def.Hooks.(registry.Connecter); ok && cn.Connects(sub) {
		return func(h *Handler, c *call) { h.connect(c, cn) }
	}
	switch verb := c.info.Verb; {
	case verb == "get":
		return (*Handler).get
	case verb == "update" && updates:
		return func(h *Handler, c *call) { h.update(c, c.info.Subresource) }
	case verb == "patch" && updates:
		return func(h *Handler, c *call) { h.patch(c, c.info.Subresource) }
	case verb == "create" && creates:
		return func(h *Handler, c *call) { h.createSubresource(c, sc) }
	}
	return nil
}

// servesOther reports whether the version declares the request's
// subresource, for the request's verb, among its built-in subresources.
func servesOther(c *call) bool {
	for _, o := range c.version.Subresources.Other {
		if o.Name == c.info.Subresource {
			return slices.Contains(o.Verbs, c.info.Verb)
		}
	}
	return false
}

// unknownSubresource answers a subresource the resource does not serve
// (or not with this verb). Upstream's custom resource handler says the
// object is not found; built-ins are routes of upstream's REST router,
// which answers a path it has no route for with a generic 404 Status and
// a known path with another method with a 405.
func unknownSubresource(c *call) error {
	if !goTyped(c.def) {
		return apierrors.NewNotFound(c.gr(), c.info.Name)
	}
	for _, o := range c.version.Subresources.Other {
		if o.Name == c.info.Subresource {
			return methodNotAllowed()
		}
	}
	return codec.NotFound()
}

// methodNotAllowed is upstream's REST router's 405 for a path it serves
// with other methods.
func methodNotAllowed() error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}

// routed reports whether upstream has a route for c: every verb of a
// resource that serves them all, and for one that serves fewer (namespaces
// have no deletecollection, reviews only create), its verbs, and a watch
// where it lists (its list route answers the watch).
func routed(c *call) bool {
	if c.info.Subresource != "" || c.def.Verbs == nil || slices.Contains(c.def.Verbs, c.info.Verb) {
		return true
	}
	return c.info.Verb == "watch" && slices.Contains(c.def.Verbs, "list")
}

func (h *Handler) serveMain(c *call) {
	if !routed(c) {
		codec.WriteStatus(c.w, c.r, methodNotAllowed())
		return
	}
	if c.info.Verb == "proxy" && goTyped(c.def) {
		// The /proxy/ paths of the built-ins are gone (their proxy
		// subresources replaced them): upstream's router has no route.
		codec.WriteStatus(c.w, c.r, codec.NotFound())
		return
	}
	if rd, ok := c.def.Hooks.(registry.Reader); ok {
		switch c.info.Verb {
		case "get":
			h.getComputed(c, rd)
		case "list":
			h.listComputed(c, rd)
		default:
			codec.WriteStatus(c.w, c.r, methodNotSupported(c))
		}
		return
	}
	switch c.info.Verb {
	case "get":
		h.get(c)
	case "list":
		h.list(c)
	case "watch":
		h.watch(c)
	case "create":
		h.create(c)
	case "update":
		h.update(c, "")
	case "patch":
		h.patch(c, "")
	case "delete":
		h.delete(c)
	case "deletecollection":
		h.deleteCollection(c)
	default:
		codec.WriteStatus(c.w, c.r, methodNotSupported(c))
	}
}

func (h *Handler) serveStatus(c *call) {
	switch c.info.Verb {
	case "get":
		h.get(c)
	case "update":
		h.update(c, "status")
	case "patch":
		h.patch(c, "status")
	default:
		codec.WriteStatus(c.w, c.r, methodNotSupported(c))
	}
}

// route resolves the definition, version and store of a request.
func (h *Handler) route(w http.ResponseWriter, r *http.Request, info *request.Info) (*call, error) {
	table := h.reg.Current()
	def, ok := table.Lookup(info.APIGroup, info.Resource)
	if !ok {
		return nil, notFoundResource(table, info.APIGroup)
	}
	if info.APIGroup == "" && info.Resource == "namespaces" && len(info.Parts) >= 2 && info.Parts[0] == "namespaces" && info.Parts[1] == info.Name {
		// /api/v1/namespaces/<name>: request info names the namespace
		// object as its own namespace; the resource is cluster-scoped.
		cp := *info
		cp.Namespace = ""
		info = &cp
	}
	version, ok := def.ServedVersion(info.APIVersion)
	if !ok {
		return nil, notFoundResource(table, info.APIGroup)
	}
	if def.Namespaced() != (info.Namespace != "") {
		// A namespaced resource listed across namespaces has no namespace;
		// anything else is a path the resource does not have.
		if !(def.Namespaced() && (info.Verb == "list" || info.Verb == "watch")) {
			return nil, notFoundResource(table, info.APIGroup)
		}
	}
	store, ok := h.stores.Store(def.GroupResource())
	if !ok {
		return nil, notFoundResource(table, info.APIGroup)
	}
	if px, ok := def.Hooks.(registry.Proxier); ok && info.Subresource != "" && px.Proxies(info.Subresource) {
		// The answer is the backend's, in whatever type it has: upstream's
		// proxy routes refuse no Accept.
		return &call{w: w, r: r, info: info, def: def, version: version, store: store, media: codec.JSON, table: table}, nil
	}
	accept := r.Header.Get("Accept")
	negotiate := codec.Negotiate
	if goTyped(def) {
		if err := codec.RouteNotAcceptable(accept, info.Verb == "list" || info.Verb == "watch"); err != nil {
			return nil, err
		}
		// Only a client that names protobuf pays for finding out whether
		// the resource has a protobuf form.
		if strings.Contains(accept, "protobuf") && protobufHooks(&call{def: def, version: version}) != nil {
			negotiate = codec.NegotiateProtobuf
		}
	}
	mt, err := negotiate(accept)
	if err != nil {
		return nil, err
	}
	if info.Verb == "watch" && mt.Type == codec.MediaYAML {
		// YAML has no stream form, and upstream does not look further
		// than the first form the client accepts.
		return nil, statusError(http.StatusNotAcceptable, "NotAcceptable",
			"only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
	}
	mt.Pretty = mt.Pretty || codec.PrettyRequested(r)
	if _, unstored := def.Hooks.(registry.Creator); unstored && mt.As != "" {
		// The reviews have no Table or metadata form: upstream's
		// negotiation refuses the transform before reading the body.
		return nil, statusError(http.StatusNotAcceptable, "NotAcceptable",
			"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
	}
	c := &call{w: w, r: r, info: info, def: def, version: version, store: store, media: mt, peers: table.SharingStorage(def), table: table}
	// A bad includeObject is refused before anything is read or written.
	if err := checkTableOptions(c); err != nil {
		return nil, err
	}
	return c, nil
}

// notFoundResource answers a path no served resource has, in group.
// Upstream's REST router serves the built-in groups and answers such a path
// with a NotFound Status; under any other group (custom resources' or none)
// the answer is a plain-text 404, and clients word their errors on that
// difference. errPathNotFound marks the latter for ServeHTTP.
func notFoundResource(t *registry.Table, group string) error {
	if t.BuiltinGroup(group) {
		return codec.NotFound()
	}
	return errPathNotFound
}

var errPathNotFound = errors.New("404 page not found")

// writeError sends err; a path no resource has gets upstream's plain 404.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errPathNotFound) {
		http.NotFound(w, r)
		return
	}
	codec.WriteStatus(w, r, err)
}

func methodNotSupported(c *call) error {
	return apierrors.NewMethodNotSupported(c.gr(), c.info.Verb)
}

// deprecatedRequested tells the client, the audit log and the metrics
// that c asks for a deprecated version, as upstream does for every
// request to one: a Warning header, the k8s.io/deprecated (and
// k8s.io/removed-release) audit annotations, and the
// apiserver_requested_deprecated_apis gauge.
func (h *Handler) deprecatedRequested(c *call) {
	addWarning(c, deprecationWarning(c))
	ctx := c.r.Context()
	audit.AddAnnotation(ctx, "k8s.io/deprecated", "true")
	if c.version.RemovedRelease != "" {
		audit.AddAnnotation(ctx, "k8s.io/removed-release", c.version.RemovedRelease)
	}
	h.metrics.DeprecatedRequested(c.def.Group, c.version.Name, c.def.Resource, c.info.Subresource, c.version.RemovedRelease)
}

// deprecationWarning is the version's warning, or upstream's default: it
// names the highest served, not deprecated version above the request's,
// if any.
func deprecationWarning(c *call) string {
	if c.version.DeprecationWarning != "" {
		return c.version.DeprecationWarning
	}
	msg := c.apiVersion() + " " + c.def.Kind + " is deprecated"
	var use string
	for _, v := range c.def.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(c.version.Name, v.Name) < 0 &&
			(use == "" || version.CompareKubeAwareVersionStrings(v.Name, use) > 0) {
			use = v.Name
		}
	}
	if use == "" {
		return msg
	}
	gv := use
	if c.def.Group != "" {
		gv = c.def.Group + "/" + use
	}
	return msg + "; use " + gv + " " + c.def.Kind
}

// dryRun reports whether the request asks for dryRun=All. Writes validate
// the parameter first (checkWriteOptions); the error here is a safety net.
func dryRun(r *http.Request) (bool, error) {
	vals := r.URL.Query()["dryRun"]
	for _, v := range vals {
		if v != "All" {
			return false, apierrors.NewBadRequest("Invalid dryRun value: " + v + `: supported values: "All"`)
		}
	}
	return len(vals) > 0, nil
}
