"""Inference of Hugging Face transformers' Whisper (OpenAI's speech encoder-decoder; random weights from a config:
nothing downloaded) compiled under `torch.compile(mode="max-autotune-no-cudagraphs")`, GEMMs from Inductor's
Triton templates only and coordinate-descent tuning on, as `t5_max_autotune_infer.py` compiles T5. Whisper adds
what the text models lack: its encoder's two 1-D convolutions over a log-mel spectrogram (stride 1 and 2, each
followed by a GELU; ATen's: Inductor's Triton convolution template takes 2-D ones and depthwise 1-D ones only),
sinusoidal position embeddings, LayerNorms with a bias, and cross-attention from the decoder into the audio
encoding. 2 encoder and 2 decoder layers, d_model 256, 4 heads of 64, MLP 1024, 80 mel bins over 512 frames (256
encoder positions), 4,096-token vocabulary; batch 4, 64 target tokens; bf16 weights, forward only under
`torch.inference_mode()`. Small: a cold max-autotune compile is minutes.

    python benchmarks/workloads/whisper_max_autotune_infer.py [STEPS] [--profile OUT.json]

`--profile OUT.json`: `torch.profiler`'s kernel table of the steps after the first two (`steady_profile`).
"""

import torch
import transformers

import steady_profile

BATCH, MEL_BINS, FRAMES, TARGET_TOKENS = 4, 80, 512, 64


def build():
    config = transformers.WhisperConfig(vocab_size=4096, num_mel_bins=MEL_BINS, d_model=256, encoder_layers=2,
                                        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                                        encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_source_positions=FRAMES // 2,
                                        max_target_positions=TARGET_TOKENS, pad_token_id=0, bos_token_id=1,
                                        eos_token_id=2, decoder_start_token_id=1, use_cache=False)
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(config).cuda().to(torch.bfloat16).eval()
    features = torch.randn(BATCH, MEL_BINS, FRAMES, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, config.vocab_size, (BATCH, TARGET_TOKENS), device="cuda")
    return torch.compile(model, mode="max-autotune-no-cudagraphs"), {"input_features": features,
                                                                    "decoder_input_ids": target}


if __name__ == "__main__":
    steady_profile.inference_main(build)
