package crd

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TableColumns are upstream's Table columns for CRDs, Name included. Two
// are computed rather than read by JSONPath (Versions, Established) and
// Created At is an absolute time, so a handler that can print through
// TableColumns and TableRow should prefer them to the definition's
// PrinterColumns.
func (Hooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
		{Name: "Scope", Type: "string", Description: "Cluster/Namespaced"},
		{Name: "Versions", Type: "string", Description: "Served versions"},
		{Name: "Created At", Type: "date", Description: metaDocs["creationTimestamp"]},
		{Name: "Group", Type: "string", Priority: 1, Description: "API group"},
		{Name: "Kind", Type: "string", Priority: 1, Description: "CustomResource kind"},
		{Name: "ShortNames", Type: "string", Priority: 1, Description: "Short names"},
		{Name: "Established", Type: "boolean", Priority: 1, Description: "Established status"},
	}
}

// TableRow returns one CRD's cells for TableColumns.
func (Hooks) TableRow(obj map[string]any) []any {
	c, err := decode(obj)
	if err != nil {
		md, _ := obj["metadata"].(map[string]any)
		return []any{md["name"], nil, nil, nil, nil, nil, nil, nil}
	}
	var versions []string
	for _, v := range c.Spec.Versions {
		if !v.Served {
			continue
		}
		label := v.Name
		if v.Storage {
			label += "(storage)"
		}
		versions = append(versions, label)
	}
	sort.Strings(versions)
	return []any{
		c.Name,
		string(c.Spec.Scope),
		strings.Join(versions, ","),
		c.CreationTimestamp.Time.UTC().Format(time.RFC3339),
		c.Spec.Group,
		c.Spec.Names.Kind,
		strings.Join(c.Spec.Names.ShortNames, ","),
		isEstablished(c),
	}
}
