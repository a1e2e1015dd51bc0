/* The status page's HTML; see page.c. */
#ifndef KVG_UI_PAGE_H
#define KVG_UI_PAGE_H

#include <stddef.h>

/* The page (static, not NUL-terminated in *len's count). */
const char *kvg_ui_page(size_t *len);

#endif
