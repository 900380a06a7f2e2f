package builtin

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const urlForm = "; desired format: https://host[/path]"

// ValidateWebhookURL validates a webhook client configuration's url, as
// upstream validates admission and conversion webhooks' alike.
func ValidateWebhookURL(raw string, p *field.Path) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(p, "url must be a valid URL: "+err.Error()+urlForm)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+urlForm))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be specified"+urlForm))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// ValidateWebhookService validates a webhook client configuration's
// service, as upstream validates admission and conversion webhooks' alike.
func ValidateWebhookService(name, namespace string, path *string, port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	}
	if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(p.Child("port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if path == nil || *path == "" || *path == "/" {
		return errs
	}
	pp := p.Child("path")
	s := *path
	if s == "//" {
		return append(errs, field.Invalid(pp, s, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(s, "/") {
		errs = append(errs, field.Invalid(pp, s, "must start with a '/'"))
	}
	rest := strings.TrimSuffix(s[1:], "/")
	for i, seg := range strings.Split(rest, "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(pp, s, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(pp, s, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}
