/*
 * Internal to src/net's OpenAI files: the error classifier shared by the response parser (an
 * error object inside a stream) and sw_openai_parse_error (an error body). Not public.
 */
#ifndef SW_OPENAI_INTERNAL_H
#define SW_OPENAI_INTERNAL_H

#include <slipway/openai.h>

/* Fill *o from a parsed JSON object that holds an error in any known shape. */
void sw__openai_error_from_json(json_t *root, long http_status, struct sw_openai_error *o);

#endif
