/* Between the stream translator's reader (sse_xlate.c) and its writer of
 * Responses and Messages events (sse_events.c). */
#ifndef KVG_API_SSE_INT_H
#define KVG_API_SSE_INT_H

#include "api/api_int.h"

/* t->state flags */
#define KVG__XL_STARTED 1 /* the opening events are out */
#define KVG__XL_DONE 2    /* the closing (or error) events are out: nothing more */
#define KVG__XL_DATA 4    /* the current event has a data line */

/* t->block: the open output item / content block */
#define KVG__XL_NONE (-1)
#define KVG__XL_THINK 0 /* reasoning item / thinking block */
#define KVG__XL_TEXT 1  /* message item / text block */
#define KVG__XL_TOOL 2  /* function_call item / tool_use block (t->call holds id and name) */

/* The opening events (response.created and .in_progress; message_start). */
int kvg__xl_start(struct kvg_api_sse_xlate *t, struct kvg_buf *out);
/* Opens an item / block of kind (the open one closed first by the caller). */
int kvg__xl_open(struct kvg_api_sse_xlate *t, int kind, struct kvg_buf *out);
/* Closes the open item / block, if any. */
int kvg__xl_close(struct kvg_api_sse_xlate *t, struct kvg_buf *out);
/* Text for the open item / block (reasoning, text, or tool arguments). */
int kvg__xl_delta(struct kvg_api_sse_xlate *t, const char *s, size_t n, struct kvg_buf *out);
/* The end of a whole answer: the open block closed, response.completed or
 * message_delta and message_stop. Sets KVG__XL_DONE. */
int kvg__xl_finish(struct kvg_api_sse_xlate *t, struct kvg_buf *out);
/* The API's error event, msg its message. Sets KVG__XL_DONE. */
int kvg__xl_error(struct kvg_api_sse_xlate *t, const char *msg, struct kvg_buf *out);

#endif
