package encrypt

import "encoding/base64"

// versioned returns h's attribute value with another version byte.
func versioned(h Header, version byte) string {
	raw := h.Marshal()
	raw[0] = version
	return encode(raw)
}

func encode(raw []byte) string { return base64.StdEncoding.EncodeToString(raw) }
