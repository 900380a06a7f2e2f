package crd

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/schema/structural"
)

// FromCRD returns the definition that serves a stored CRD's custom
// resources. Names are the accepted ones once the naming step has accepted
// any (upstream serves status.acceptedNames), the requested ones before.
// Version.Schema is left nil: compiling schemas is the schema package's.
// Hooks is nil: custom resources have no behaviour beyond their schema.
func FromCRD(obj map[string]any) (*registry.Definition, error) {
	c, err := decode(obj)
	if err != nil {
		return nil, err
	}
	names := c.Status.AcceptedNames
	if names.Plural == "" {
		names = c.Spec.Names
	}
	d := &registry.Definition{
		Group:       c.Spec.Group,
		Resource:    names.Plural,
		Singular:    names.Singular,
		Kind:        names.Kind,
		ListKind:    names.ListKind,
		ShortNames:  names.ShortNames,
		Categories:  names.Categories,
		Scope:       registry.Scope(c.Spec.Scope),
		Terminating: c.DeletionTimestamp != nil,

		PreserveUnknownFields: c.Spec.PreserveUnknownFields,
	}
	if conv := c.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter && conv.Webhook != nil {
		d.Conversion = &registry.Conversion{ReviewVersions: conv.Webhook.ConversionReviewVersions}
		if cc := conv.Webhook.ClientConfig; cc != nil {
			if cc.URL != nil {
				d.Conversion.URL = *cc.URL
			}
			d.Conversion.CABundle = cc.CABundle
			if s := cc.Service; s != nil {
				d.Conversion.Service = &registry.ServiceReference{Namespace: s.Namespace, Name: s.Name, Port: 443}
				if s.Path != nil {
					d.Conversion.Service.Path = *s.Path
				}
				if s.Port != nil {
					d.Conversion.Service.Port = *s.Port
				}
			}
		}
	}
	for _, v := range c.Spec.Versions {
		rv := registry.Version{
			Name:           v.Name,
			Served:         v.Served,
			Storage:        v.Storage,
			Deprecated:     v.Deprecated,
			PrinterColumns: printerColumns(v.AdditionalPrinterColumns),
		}
		if v.DeprecationWarning != nil {
			rv.DeprecationWarning = *v.DeprecationWarning
		}
		for _, f := range v.SelectableFields {
			rv.SelectableFields = append(rv.SelectableFields, strings.TrimPrefix(f.JSONPath, "."))
		}
		if s := v.Subresources; s != nil {
			rv.Subresources.Status = s.Status != nil
			if s.Scale != nil {
				rv.Subresources.Scale = &registry.Scale{
					SpecReplicasPath:   s.Scale.SpecReplicasPath,
					StatusReplicasPath: s.Scale.StatusReplicasPath,
				}
				if s.Scale.LabelSelectorPath != nil {
					rv.Subresources.Scale.LabelSelectorPath = *s.Scale.LabelSelectorPath
				}
			}
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("crd %s version %s: encoding openAPIV3Schema: %w", c.Name, v.Name, err)
			}
			rv.OpenAPISchema = b
			rv.NonStructural = !structural.IsStructural(v.Schema.OpenAPIV3Schema)
		}
		d.Versions = append(d.Versions, rv)
	}
	return d, nil
}

// printerColumns are a version's columns; a version that declares none
// shows its age, as upstream.
func printerColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) []registry.PrinterColumn {
	if len(cols) == 0 {
		return []registry.PrinterColumn{registry.AgeColumn}
	}
	out := make([]registry.PrinterColumn, len(cols))
	for i, c := range cols {
		out[i] = registry.PrinterColumn{
			Name: c.Name, Type: c.Type, Format: c.Format,
			Description: c.Description, Priority: c.Priority, JSONPath: c.JSONPath,
		}
	}
	return out
}
