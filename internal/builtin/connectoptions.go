package builtin

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The options of the connect subresources, decoded from a query as
// upstream's parameter codec decodes them into their v1 types and
// written as those types' JSON writes them (false, "" and empty members
// left out, except PodExecOptions' command, which is always written).

// execOptions are a PodExecOptions' fields; attach's PodAttachOptions
// are those without command.
func execOptions(q url.Values, command bool) map[string]any {
	opts := map[string]any{}
	for _, k := range []string{"stdin", "stdout", "stderr", "tty"} {
		if queryBool(q, k) {
			opts[k] = true
		}
	}
	if c := q.Get("container"); c != "" {
		opts["container"] = c
	}
	if command {
		// Every command parameter is an argument, in order.
		var args any
		if cs := q["command"]; len(cs) > 0 {
			list := make([]any, len(cs))
			for i, c := range cs {
				list[i] = c
			}
			args = list
		}
		opts["command"] = args
	}
	return opts
}

// queryBool is a boolean parameter as upstream reads one: its first
// value, false when it is absent, "0" or "false" (in any case), true
// otherwise, the empty value among them.
func queryBool(q url.Values, key string) bool {
	v, ok := q[key]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// portForwardOptions are a PodPortForwardOptions' fields: every ports
// parameter is a comma-separated list of port numbers, 0 to 65535.
func portForwardOptions(q url.Values) (map[string]any, error) {
	var ports []any
	for _, v := range q["ports"] {
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot convert to []int32: %v", err))
			}
			ports = append(ports, int64(n))
		}
	}
	opts := map[string]any{}
	if len(ports) > 0 {
		opts["ports"] = ports
	}
	return opts, nil
}

// proxyOptions are a PodProxyOptions' or NodeProxyOptions' fields: the
// path is the one the request names after the subresource, whatever
// path parameter the query has.
func proxyOptions(subpath string) map[string]any {
	if subpath == "" {
		return map[string]any{}
	}
	return map[string]any{"path": subpath}
}
