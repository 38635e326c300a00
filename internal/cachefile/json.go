package cachefile

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Unmarshal decodes JSON into v as encoding/json's Unmarshal does (its
// options: v1 semantics, UnmarshalJSON methods included), in one pass:
// encoding/json scans the whole input for validity before it decodes it,
// and restarted processes spend most of their time reading cached objects
// back. Caches still check that what they store decodes back equal with
// this function before storing it, so a difference between the two
// decoders costs a miss, never a wrong object.
func Unmarshal(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1())
}
