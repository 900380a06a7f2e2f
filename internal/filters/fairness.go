package filters

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/fairness"
	"github.com/crdserver/crdserver/internal/flowcontrol"
	"github.com/crdserver/crdserver/internal/request"
)

// tooManyRequests is upstream's text for a request refused by priority and
// fairness (and by max-in-flight before it); clients retry after
// Retry-After.
const tooManyRequests = "Too many requests, please try again later."

// Queue waits: upstream lets a request wait in its queue for a quarter of
// the time it has left (its deadline is set by Timeout), at most a minute,
// and a quarter of its default request timeout when it has no deadline.
const (
	maxQueueWait     = time.Minute
	defaultQueueWait = 15 * time.Second
)

// probePaths are the health checks, which upstream's "probes" FlowSchema
// puts in the exempt priority level: a server too busy for its users must
// still answer its kubelet or load balancer.
var probePaths = []string{"/healthz", "/livez", "/readyz"}

// Exempt reports whether a request bypasses the fair queues, as upstream's
// exempt priority level: requests of system:masters, and the health checks.
func Exempt(r *http.Request, u *authn.User) bool {
	if u != nil && slices.Contains(u.Groups, authn.Masters) {
		return true
	}
	for _, p := range probePaths {
		if r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			return true
		}
	}
	return false
}

// FairQueue serves non-long-running requests within q's seats, one flow per
// user name (upstream's ByUser flow distinguisher), so that one user's flood
// waits in that user's own queue while others are served. A request that
// finds its user's queue full, or that waits longer than its queue wait
// (a quarter of its time left, see Timeout), gets a 429 TooManyRequests
// Status with upstream's message and a Retry-After that grows while the
// refusals go on (fairness.RetryAfter), as upstream answers.
// Long-running requests (LongRunning: watches, exec, proxy) and exempt ones
// (Exempt) bypass the queues. A nil q queues nothing. It needs RequestInfo
// and Authenticate before it.
func FairQueue(q *fairness.Queues) Filter {
	return func(next http.Handler) http.Handler {
		if q == nil {
			return next
		}
		var retry fairness.RetryAfter
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if info, ok := request.InfoFrom(r.Context()); ok && LongRunning(info) {
				next.ServeHTTP(w, r)
				return
			}
			u, _ := authn.UserFrom(r.Context())
			if Exempt(r, u) {
				next.ServeHTTP(w, r)
				return
			}
			flow := authn.Anonymous
			if u != nil {
				flow = u.Name
			}
			ctx, cancel := context.WithTimeout(r.Context(), queueWait(r.Context()))
			release, err := q.Acquire(ctx, flow)
			cancel()
			if err != nil {
				// The client may be gone (its context cancelled); the
				// answer is the same, as upstream's.
				codec.WriteStatus(w, r, apierrors.NewTooManyRequests(tooManyRequests, retry.Refused()))
				return
			}
			defer release()
			next.ServeHTTP(w, r)
		})
	}
}

// queueWait is how long a request with ctx may wait for a seat.
func queueWait(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return defaultQueueWait
	}
	return min(time.Until(deadline)/4, maxQueueWait)
}

// DefaultMaxWatchesPerUser is the default of MaxWatchesPerUser: far more
// than a controller's informers, or several replicas' of one service
// account, yet a bound on what a runaway client can hold open.
const DefaultMaxWatchesPerUser = 500

// MaxWatchesPerUser lets each user hold at most n watches open at once; one
// more gets a 429 TooManyRequests Status with Retry-After: 1. Members of
// system:masters are not limited, as they are exempt from the fair queues.
// n <= 0: no limit. It needs RequestInfo and Authenticate before it.
// (Upstream has no such cap: watches there count against a priority level
// only while they start. crdserver holds every watch in memory, in one
// process, so it bounds them per user.)
func MaxWatchesPerUser(n int) Filter {
	return func(next http.Handler) http.Handler {
		if n <= 0 {
			return next
		}
		var mu sync.Mutex // guards open
		open := map[string]int{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, ok := request.InfoFrom(r.Context())
			if !ok || info.Verb != "watch" {
				next.ServeHTTP(w, r)
				return
			}
			u, _ := authn.UserFrom(r.Context())
			if u != nil && slices.Contains(u.Groups, authn.Masters) {
				next.ServeHTTP(w, r)
				return
			}
			name := authn.Anonymous
			if u != nil {
				name = u.Name
			}
			mu.Lock()
			if open[name] >= n {
				mu.Unlock()
				codec.WriteStatus(w, r, apierrors.NewTooManyRequests(tooManyWatches(name, n), 1))
				return
			}
			open[name]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				if open[name]--; open[name] == 0 {
					delete(open, name)
				}
				mu.Unlock()
			}()
			next.ServeHTTP(w, r)
		})
	}
}

func tooManyWatches(user string, n int) string {
	return fmt.Sprintf("too many watches: user %q has %d open, the most allowed; please try again later", user, n)
}

// Classify classifies each request as upstream's API Priority and
// Fairness does (by the FlowSchemas of current's classifier, nil for
// none) and answers which schema and priority level matched in
// upstream's X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers. Long-running requests other
// than watches are not classified, as upstream. It needs RequestInfo,
// Authenticate and Impersonate before it: upstream classifies the
// impersonated user, before authorization.
func Classify(current func() *flowcontrol.Classifier) Filter {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, ok := request.InfoFrom(r.Context())
			c := current()
			if !ok || c == nil || LongRunning(info) && info.Verb != "watch" {
				next.ServeHTTP(w, r)
				return
			}
			u, _ := authn.UserFrom(r.Context())
			if class, ok := c.Classify(u, info); ok {
				h := w.Header()
				h[priorityLevelUIDHeader] = []string{class.PriorityLevelUID}
				h[flowSchemaUIDHeader] = []string{class.FlowSchemaUID}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// The response headers of a request's classification, canonical.
var (
	flowSchemaUIDHeader    = http.CanonicalHeaderKey(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	priorityLevelUIDHeader = http.CanonicalHeaderKey(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
)
