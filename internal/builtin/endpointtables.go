package builtin

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// The Table columns upstream prints for Endpoints and EndpointSlices:
// their addresses, at most three, and how many more.

var (
	_ registry.TablePrinter = endpointsHooks{}
	_ registry.TablePrinter = endpointSliceHooks{}
)

// shownAddresses is how many addresses a cell lists before "+ N more...".
const shownAddresses = 3

// firstFew is list's first shownAddresses entries, joined, and how many
// more there were of total; empty when list is.
func firstFew(list []string, total int) string {
	s := strings.Join(list[:min(len(list), shownAddresses)], ",")
	if total > shownAddresses {
		s += fmt.Sprintf(" + %d more...", total-shownAddresses)
	}
	return s
}

func (endpointsHooks) TableColumns() []metav1.TableColumnDefinition {
	return columns(metav1.TableColumnDefinition{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]})
}

func (h endpointsHooks) TableRow(obj map[string]any) []any {
	ep, _, err := h.Decode(obj)
	if err != nil {
		return []any{objectName(obj), "", objectAge(obj)}
	}
	return []any{objectName(obj), endpointsCell(ep.Subsets), objectAge(obj)}
}

// endpointsCell lists the subsets' addresses, each with each of its
// subset's ports (host:port), or alone when the subset has none.
func endpointsCell(subsets []corev1.EndpointSubset) string {
	if len(subsets) == 0 {
		return "<none>"
	}
	var list []string
	total := 0
	for _, ss := range subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			total += len(ss.Addresses)
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
			total += len(ss.Addresses)
		}
	}
	return firstFew(list, total)
}

func (endpointSliceHooks) TableColumns() []metav1.TableColumnDefinition {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return columns(
		metav1.TableColumnDefinition{Name: "AddressType", Type: "string", Description: doc["addressType"]},
		metav1.TableColumnDefinition{Name: "Ports", Type: "string", Description: doc["ports"]},
		metav1.TableColumnDefinition{Name: "Endpoints", Type: "string", Description: doc["endpoints"]},
	)
}

func (h endpointSliceHooks) TableRow(obj map[string]any) []any {
	s, _, err := h.Decode(obj)
	if err != nil {
		return []any{objectName(obj), "", "", "", objectAge(obj)}
	}
	var ports []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "<unset>")
		}
	}
	var addrs []string
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	return []any{objectName(obj), string(s.AddressType), orUnset(firstFew(ports, len(ports))), orUnset(firstFew(addrs, len(addrs))), objectAge(obj)}
}

func orUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}
