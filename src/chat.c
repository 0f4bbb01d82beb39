// chat.c — built-in chat templates. A model's template text (Jinja in its metadata) is never
// executed: it is only searched for the markers that identify one of the formats below, and
// the conversation is then laid out by C code for that format.
#include "llama-impl.h"

#include <stdlib.h>
#include <string.h>

enum llama_chat_tmpl {
    LLAMA_CHAT_TMPL_UNKNOWN = -1,
    LLAMA_CHAT_TMPL_CHATML,
    LLAMA_CHAT_TMPL_LLAMA2,
    LLAMA_CHAT_TMPL_LLAMA2_SYS,
    LLAMA_CHAT_TMPL_LLAMA3,
    LLAMA_CHAT_TMPL_ZEPHYR,
    LLAMA_CHAT_TMPL_MISTRAL_V1,
    LLAMA_CHAT_TMPL_MISTRAL_V3,
    LLAMA_CHAT_TMPL_MISTRAL_V7,
    LLAMA_CHAT_TMPL_PHI3,
    LLAMA_CHAT_TMPL_GEMMA,
    LLAMA_CHAT_TMPL_COUNT,
};

static const char * const llama_chat_tmpl_names[LLAMA_CHAT_TMPL_COUNT] = {
    "chatml", "llama2", "llama2-sys", "llama3", "zephyr", "mistral-v1", "mistral-v3", "mistral-v7", "phi3", "gemma",
};

// A growable string; on allocation failure `failed` is set and appends become no-ops.
struct chat_buf {
    char * data;
    size_t len, cap;
    bool failed;
};

static void chat_buf_add(struct chat_buf * b, const char * s) {
    if (b->failed || !s) return;
    const size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char * p = GGML_REALLOC(b->data, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

// Appends s without leading/trailing whitespace (the published templates trim content).
static void chat_buf_add_trimmed(struct chat_buf * b, const char * s) {
    if (!s) return;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f') s++;
    size_t n = strlen(s);
    while (n > 0 &&
           (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\v' || s[n - 1] == '\f'))
        n--;
    char tmp[256];
    while (n > 0 && !b->failed) {
        const size_t k = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
        memcpy(tmp, s, k);
        tmp[k] = '\0';
        chat_buf_add(b, tmp);
        s += k;
        n -= k;
    }
}

static enum llama_chat_tmpl llama_chat_detect(const char * tmpl) {
    if (tmpl == NULL) return LLAMA_CHAT_TMPL_CHATML;
    for (int i = 0; i < LLAMA_CHAT_TMPL_COUNT; i++) {
        if (strcmp(tmpl, llama_chat_tmpl_names[i]) == 0) return (enum llama_chat_tmpl) i;
    }
    if (strcmp(tmpl, "mistral") == 0) return LLAMA_CHAT_TMPL_MISTRAL_V3;
    if (strstr(tmpl, "<|im_start|>")) return LLAMA_CHAT_TMPL_CHATML;
    if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "<|end_header_id|>")) return LLAMA_CHAT_TMPL_LLAMA3;
    if (strstr(tmpl, "<|assistant|>") && strstr(tmpl, "<|end|>")) return LLAMA_CHAT_TMPL_PHI3;
    if (strstr(tmpl, "<|user|>")) return LLAMA_CHAT_TMPL_ZEPHYR;
    if (strstr(tmpl, "<start_of_turn>")) return LLAMA_CHAT_TMPL_GEMMA;
    if (strstr(tmpl, "[SYSTEM_PROMPT]")) return LLAMA_CHAT_TMPL_MISTRAL_V7;
    if (strstr(tmpl, "[INST]")) {
        if (strstr(tmpl, "<<SYS>>")) return LLAMA_CHAT_TMPL_LLAMA2_SYS;
        if (strstr(tmpl, "' [/INST]'")) return LLAMA_CHAT_TMPL_MISTRAL_V1;
        return LLAMA_CHAT_TMPL_MISTRAL_V3;
    }
    return LLAMA_CHAT_TMPL_UNKNOWN;
}

// [INST]-style formats. Llama 2 folds the system text into the first user turn, strips
// content and opens every later turn with <s>; Mistral v3 puts the system text on the last
// user turn; v7 has its own system block; v1 spaces "[INST] text [/INST]answer</s>".
static void chat_format_inst(struct chat_buf * b, enum llama_chat_tmpl t, const struct llama_chat_message * chat, size_t n) {
    const bool llama2 = t == LLAMA_CHAT_TMPL_LLAMA2 || t == LLAMA_CHAT_TMPL_LLAMA2_SYS;
    const char * sys = NULL;
    size_t last_user = n;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(chat[i].role, "user") == 0) last_user = i;
    }
    bool first_turn = true;
    for (size_t i = 0; i < n; i++) {
        const char * role = chat[i].role;
        const char * content = chat[i].content;
        if (strcmp(role, "system") == 0) {
            if (t == LLAMA_CHAT_TMPL_MISTRAL_V7) {
                chat_buf_add(b, "[SYSTEM_PROMPT] ");
                chat_buf_add(b, content);
                chat_buf_add(b, "[/SYSTEM_PROMPT]");
            } else {
                sys = content;
            }
        } else if (strcmp(role, "user") == 0) {
            if (llama2 && !first_turn) chat_buf_add(b, "<s>");
            chat_buf_add(b, "[INST] ");
            const bool put_sys = sys && (t == LLAMA_CHAT_TMPL_MISTRAL_V3 ? i == last_user : first_turn);
            if (put_sys) {
                if (llama2) {
                    chat_buf_add(b, "<<SYS>>\n");
                    chat_buf_add(b, sys);
                    chat_buf_add(b, "\n<</SYS>>\n\n");
                } else {
                    chat_buf_add(b, sys);
                    chat_buf_add(b, "\n\n");
                }
            }
            if (llama2)
                chat_buf_add_trimmed(b, content);
            else
                chat_buf_add(b, content);
            chat_buf_add(b, t == LLAMA_CHAT_TMPL_MISTRAL_V3 || t == LLAMA_CHAT_TMPL_MISTRAL_V7 ? "[/INST]" : " [/INST]");
            first_turn = false;
        } else { // assistant
            if (llama2) {
                chat_buf_add(b, " ");
                chat_buf_add_trimmed(b, content);
                chat_buf_add(b, " </s>");
            } else {
                if (t != LLAMA_CHAT_TMPL_MISTRAL_V1) chat_buf_add(b, " ");
                chat_buf_add(b, content);
                chat_buf_add(b, "</s>");
            }
        }
    }
}

static void chat_format(struct chat_buf * b, enum llama_chat_tmpl t, const struct llama_chat_message * chat, size_t n,
                        bool add_ass, const char * eos) {
    switch (t) {
        case LLAMA_CHAT_TMPL_CHATML:
            for (size_t i = 0; i < n; i++) {
                chat_buf_add(b, "<|im_start|>");
                chat_buf_add(b, chat[i].role);
                chat_buf_add(b, "\n");
                chat_buf_add(b, chat[i].content);
                chat_buf_add(b, "<|im_end|>\n");
            }
            if (add_ass) chat_buf_add(b, "<|im_start|>assistant\n");
            break;
        case LLAMA_CHAT_TMPL_LLAMA3:
            for (size_t i = 0; i < n; i++) {
                chat_buf_add(b, "<|start_header_id|>");
                chat_buf_add(b, chat[i].role);
                chat_buf_add(b, "<|end_header_id|>\n\n");
                chat_buf_add_trimmed(b, chat[i].content);
                chat_buf_add(b, "<|eot_id|>");
            }
            if (add_ass) chat_buf_add(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
            break;
        case LLAMA_CHAT_TMPL_ZEPHYR:
            for (size_t i = 0; i < n; i++) {
                chat_buf_add(b, "<|");
                chat_buf_add(b, chat[i].role);
                chat_buf_add(b, "|>\n");
                chat_buf_add(b, chat[i].content);
                chat_buf_add(b, eos);
                chat_buf_add(b, "\n");
            }
            if (add_ass) chat_buf_add(b, "<|assistant|>\n");
            break;
        case LLAMA_CHAT_TMPL_PHI3:
            for (size_t i = 0; i < n; i++) {
                chat_buf_add(b, "<|");
                chat_buf_add(b, chat[i].role);
                chat_buf_add(b, "|>\n");
                chat_buf_add(b, chat[i].content);
                chat_buf_add(b, "<|end|>\n");
            }
            chat_buf_add(b, add_ass ? "<|assistant|>\n" : "<|endoftext|>");
            break;
        case LLAMA_CHAT_TMPL_GEMMA: {
            // Gemma has no system role: the system text opens the first user turn.
            const char * pending_sys = NULL;
            for (size_t i = 0; i < n; i++) {
                const char * role = chat[i].role ? chat[i].role : "";
                if (strcmp(role, "system") == 0) {
                    pending_sys = chat[i].content;
                    continue;
                }
                chat_buf_add(b, "<start_of_turn>");
                chat_buf_add(b, strcmp(role, "assistant") == 0 ? "model" : role);
                chat_buf_add(b, "\n");
                if (pending_sys) {
                    chat_buf_add(b, pending_sys);
                    chat_buf_add(b, "\n\n");
                    pending_sys = NULL;
                }
                chat_buf_add_trimmed(b, chat[i].content);
                chat_buf_add(b, "<end_of_turn>\n");
            }
            if (add_ass) chat_buf_add(b, "<start_of_turn>model\n");
            break;
        }
        case LLAMA_CHAT_TMPL_LLAMA2:
        case LLAMA_CHAT_TMPL_LLAMA2_SYS:
        case LLAMA_CHAT_TMPL_MISTRAL_V1:
        case LLAMA_CHAT_TMPL_MISTRAL_V3:
        case LLAMA_CHAT_TMPL_MISTRAL_V7: chat_format_inst(b, t, chat, n); break;
        default: break;
    }
}

int32_t llama_chat_apply_template(const char * tmpl, const struct llama_chat_message * chat, size_t n_msg, bool add_ass,
                                  char * buf, int32_t length) {
    if (n_msg > 0 && chat == NULL) {
        LLAMA_LOG_ERROR("llama_chat_apply_template: chat is NULL with n_msg = %zu\n", n_msg);
        return -1;
    }
    const enum llama_chat_tmpl t = llama_chat_detect(tmpl);
    if (t == LLAMA_CHAT_TMPL_UNKNOWN) {
        LLAMA_LOG_ERROR(
            "llama_chat_apply_template: template not recognised (built-in names: see llama_chat_builtin_templates)\n");
        return -1;
    }
    for (size_t i = 0; i < n_msg; i++) {
        if (!chat[i].role || !chat[i].content) {
            LLAMA_LOG_ERROR("llama_chat_apply_template: message %zu has a NULL role or content\n", i);
            return -1;
        }
    }
    struct chat_buf b = { NULL, 0, 0, false };
    chat_buf_add(&b, "");
    // Zephyr turns end with the model's eos text: </s> (zephyr-7b-beta, TinyLlama-Chat) unless
    // the template spells out <|endoftext|> (StableLM-Zephyr).
    const char * eos = tmpl && strstr(tmpl, "<|endoftext|>") ? "<|endoftext|>" : "</s>";
    chat_format(&b, t, chat, n_msg, add_ass, eos);
    if (b.failed || b.len > INT32_MAX) {
        free(b.data);
        LLAMA_LOG_ERROR("llama_chat_apply_template: out of memory\n");
        return -1;
    }
    if (buf && length > 0) {
        const size_t n = b.len < (size_t) length ? b.len : (size_t) length;
        memcpy(buf, b.data, n);
        if (n < (size_t) length) buf[n] = '\0';
    }
    const int32_t res = (int32_t) b.len;
    free(b.data);
    return res;
}

int32_t llama_chat_builtin_templates(const char ** output, size_t len) {
    if (output) {
        for (size_t i = 0; i < len && i < LLAMA_CHAT_TMPL_COUNT; i++) output[i] = llama_chat_tmpl_names[i];
    }
    return LLAMA_CHAT_TMPL_COUNT;
}
