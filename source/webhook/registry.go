package webhook

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// parseRegistry reads a distribution notification envelope and turns every
// manifest push in it into one image_push event. Pulls, deletes, mounts and
// blob (layer) pushes are skipped; an envelope with no manifest push is
// ignored.
func parseRegistry(h http.Header, body []byte) (parsed, error) {
	mediaType, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || !registryMediaTypes[mediaType] {
		return parsed{}, fmt.Errorf("%w %q: distribution notifications are sent as %s (registry v2) or %s (v3)",
			errUnsupportedMediaType, h.Get("Content-Type"), eventsMediaTypeV1, eventsMediaTypeV2)
	}
	var envelope struct {
		Events []registryEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return parsed{}, fmt.Errorf("registry notification: body is not an events envelope: %w", err)
	}
	var images []string
	seen := map[string]bool{}
	for _, e := range envelope.Events {
		image, ok := e.pushedImage()
		if !ok || seen[image] {
			continue
		}
		seen[image] = true
		images = append(images, image)
	}
	if len(images) == 0 {
		return ignored("registry notification with %d event(s) and no manifest push", len(envelope.Events))
	}
	return parsed{verdict: deliver, event: Event{Provider: ProviderRegistry, Kind: KindImagePush, Images: images}}, nil
}

const (
	eventsMediaTypeV1 = "application/vnd.docker.distribution.events.v1+json"
	eventsMediaTypeV2 = "application/vnd.docker.distribution.events.v2+json"
)

var registryMediaTypes = map[string]bool{
	eventsMediaTypeV1:  true,
	eventsMediaTypeV2:  true,
	"application/json": true, // registries that mimic distribution's envelope
}

// manifestMediaTypes identify a manifest push when neither a tag nor a
// manifests URL says so.
var manifestMediaTypes = map[string]bool{
	"application/vnd.docker.distribution.manifest.v2+json":      true,
	"application/vnd.docker.distribution.manifest.list.v2+json": true,
	"application/vnd.oci.image.manifest.v1+json":                true,
	"application/vnd.oci.image.index.v1+json":                   true,
}

type registryEvent struct {
	Action string `json:"action"`
	Target struct {
		MediaType  string `json:"mediaType"`
		Digest     string `json:"digest"`
		Repository string `json:"repository"`
		URL        string `json:"url"`
		Tag        string `json:"tag"`
	} `json:"target"`
	Request struct {
		Host string `json:"host"`
	} `json:"request"`
}

// pushedImage returns "host/repository[:tag]" for a manifest push. The host is
// the one the pusher addressed (request.host), or else the host of
// target.url.
func (e registryEvent) pushedImage() (string, bool) {
	t := e.Target
	if e.Action != "push" || t.Repository == "" {
		return "", false
	}
	isManifest := t.Tag != "" || manifestMediaTypes[t.MediaType] || strings.Contains(t.URL, "/manifests/")
	if !isManifest {
		return "", false
	}
	host := e.Request.Host
	if host == "" {
		if u, err := url.Parse(t.URL); err == nil {
			host = u.Host
		}
	}
	image := t.Repository
	if host != "" {
		image = strings.ToLower(host) + "/" + image
	}
	if t.Tag != "" {
		image += ":" + t.Tag
	}
	return image, true
}
