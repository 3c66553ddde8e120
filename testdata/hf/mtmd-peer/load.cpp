// load.cpp: llama.cpp's mtmd on a projector file. Usage: load TEXT.gguf MMPROJ.gguf.
// Loads the text model and the projector (mtmd_init_from_file), then encodes one
// 64x64 grey-gradient image and prints "tokens N" (the image's embeddings, [IMG_BREAK]
// rows included for Pixtral) and "embd[0..3]" from the encoder's output. Exit 1 when
// mtmd refuses the projector, 3 when the text model does not load, 4 when encoding
// fails. Built against llama.cpp's tools/mtmd sources (.ci/test-peers-mmproj).
#include <cstdio>
#include <cstring>
#include <vector>

#include "llama.h"
#include "mtmd.h"

int main(int argc, char ** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s TEXT.gguf MMPROJ.gguf\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        return 3;
    }
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.print_timings = false;
    cp.warmup = false;
    cp.n_threads = 1;
    mtmd_context * ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) {
        fprintf(stderr, "mtmd refused %s\n", argv[2]);
        return 1;
    }
    const int n = 64;
    std::vector<unsigned char> rgb(n * n * 3);
    for (int i = 0; i < n * n * 3; i++) {
        rgb[i] = (unsigned char) (i * 7 % 251);
    }
    mtmd_bitmap * bmp = mtmd_bitmap_init(n, n, rgb.data());
    mtmd_input_chunks * chunks = mtmd_input_chunks_init();
    const char * prompt = mtmd_default_marker();
    mtmd_input_text text = { prompt, strlen(prompt), false, true };
    const mtmd_bitmap * bmps[] = { bmp };
    if (mtmd_tokenize(ctx, chunks, &text, bmps, 1) != 0) {
        return 4;
    }
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const mtmd_input_chunk * c = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_IMAGE) {
            continue;
        }
        if (mtmd_encode_chunk(ctx, c) != 0) {
            return 4;
        }
        const float * e = mtmd_get_output_embd(ctx);
        printf("tokens %zu\nembd %.6g %.6g %.6g %.6g\n", mtmd_input_chunk_get_n_tokens(c), e[0], e[1], e[2], e[3]);
    }
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bmp);
    mtmd_free(ctx);
    llama_model_free(model);
    return 0;
}
