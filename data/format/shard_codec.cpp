// zstd and LZ4 frames of whole shard files, streamed both ways.
#include "data/format/shard_codec.h"

#include <lz4frame.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/error.h"
#include "data/format/manifest.h"

namespace strata::data {
namespace fs = std::filesystem;
namespace {

constexpr size_t kPiece = size_t{1} << 20;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

File open_file(const fs::path& p, const char* mode, const std::string& what) {
  File f(std::fopen(p.c_str(), mode), &std::fclose);
  if (!f) throw IoError(what + ": cannot open " + p.string() + ": " + std::strerror(errno));
  return f;
}

CodecRead reader_of(FILE* f, const fs::path& p) {
  return [f, p](uint8_t* buf, size_t cap) {
    const size_t n = std::fread(buf, 1, cap, f);
    if (n == 0 && std::ferror(f)) throw IoError("read error in " + p.string() + ": " + std::strerror(errno));
    return n;
  };
}

CodecWrite writer_of(FILE* f, const fs::path& p) {
  return [f, p](const uint8_t* buf, size_t n) {
    if (std::fwrite(buf, 1, n, f) != n)
      throw IoError("cannot write " + p.string() + ": " + std::strerror(errno));
  };
}

void close_written(File& f, const fs::path& p) {
  FILE* raw = f.release();
  if (std::fclose(raw) != 0) throw IoError("cannot write " + p.string() + ": " + std::strerror(errno));
}

void compress_zstd(const CodecRead& read, const CodecWrite& write, int64_t size, int level) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> c(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  if (!c) throw Error("zstd: cannot create a compression context");
  auto check = [](size_t r) {
    if (ZSTD_isError(r)) throw Error(std::string("zstd: ") + ZSTD_getErrorName(r));
  };
  check(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, level == 0 ? ZSTD_CLEVEL_DEFAULT : level));
  check(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1));
  check(ZSTD_CCtx_setPledgedSrcSize(c.get(), static_cast<unsigned long long>(size)));
  std::vector<uint8_t> in(kPiece), out(ZSTD_CStreamOutSize());
  for (;;) {
    const size_t n = read(in.data(), in.size());
    const ZSTD_EndDirective mode = n == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer ib{in.data(), n, 0};
    for (;;) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      const size_t left = ZSTD_compressStream2(c.get(), &ob, &ib, mode);
      check(left);
      write(out.data(), ob.pos);
      if (mode == ZSTD_e_end ? left == 0 : ib.pos == ib.size) break;
    }
    if (n == 0) return;
  }
}

void compress_lz4(const CodecRead& read, const CodecWrite& write, int64_t size, int level) {
  LZ4F_cctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createCompressionContext(&raw, LZ4F_VERSION)))
    throw Error("lz4: cannot create a compression context");
  std::unique_ptr<LZ4F_cctx, decltype(&LZ4F_freeCompressionContext)> c(raw, &LZ4F_freeCompressionContext);
  auto check = [](size_t r) {
    if (LZ4F_isError(r)) throw Error(std::string("lz4: ") + LZ4F_getErrorName(r));
    return r;
  };
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  prefs.frameInfo.contentSize = static_cast<unsigned long long>(size);
  prefs.compressionLevel = level;
  std::vector<uint8_t> in(kPiece), out(LZ4F_compressBound(kPiece, &prefs) + LZ4F_HEADER_SIZE_MAX);
  write(out.data(), check(LZ4F_compressBegin(c.get(), out.data(), out.size(), &prefs)));
  while (const size_t n = read(in.data(), in.size()))
    write(out.data(), check(LZ4F_compressUpdate(c.get(), out.data(), out.size(), in.data(), n, nullptr)));
  write(out.data(), check(LZ4F_compressEnd(c.get(), out.data(), out.size(), nullptr)));
}

[[noreturn]] void too_large(const std::string& what, int64_t max_bytes) {
  throw IoError(what + ": decodes to more than the " + std::to_string(max_bytes) + " bytes expected");
}

int64_t decompress_zstd(const CodecRead& read, const CodecWrite& write, int64_t max_bytes,
                        const std::string& what) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> d(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!d) throw Error("zstd: cannot create a decompression context");
  std::vector<uint8_t> in(ZSTD_DStreamInSize()), out(ZSTD_DStreamOutSize());
  int64_t total = 0;
  size_t last = 1;  // 0 once a frame has ended
  for (;;) {
    const size_t n = read(in.data(), in.size());
    if (n == 0) break;
    ZSTD_inBuffer ib{in.data(), n, 0};
    while (ib.pos < ib.size) {
      if (last == 0) throw IoError(what + ": bytes follow the end of the zstd frame");
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(d.get(), &ob, &ib);
      if (ZSTD_isError(last)) throw IoError(what + ": corrupt zstd frame: " + ZSTD_getErrorName(last));
      total += static_cast<int64_t>(ob.pos);
      if (total > max_bytes) too_large(what, max_bytes);
      write(out.data(), ob.pos);
    }
    // Output may remain buffered in the context with the input all consumed.
    while (last != 0) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      ZSTD_inBuffer none{nullptr, 0, 0};
      last = ZSTD_decompressStream(d.get(), &ob, &none);
      if (ZSTD_isError(last)) throw IoError(what + ": corrupt zstd frame: " + ZSTD_getErrorName(last));
      total += static_cast<int64_t>(ob.pos);
      if (total > max_bytes) too_large(what, max_bytes);
      write(out.data(), ob.pos);
      if (ob.pos < ob.size) break;  // needs more input
    }
  }
  if (last != 0) throw IoError(what + ": truncated zstd frame (the object ends inside it)");
  return total;
}

int64_t decompress_lz4(const CodecRead& read, const CodecWrite& write, int64_t max_bytes,
                       const std::string& what) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION)))
    throw Error("lz4: cannot create a decompression context");
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> d(raw, &LZ4F_freeDecompressionContext);
  std::vector<uint8_t> in(kPiece), out(kPiece);
  int64_t total = 0;
  size_t hint = 1;  // 0 once the frame has ended
  for (;;) {
    const size_t n = read(in.data(), in.size());
    if (n == 0) break;
    size_t pos = 0;
    while (pos < n) {
      if (hint == 0) throw IoError(what + ": bytes follow the end of the LZ4 frame");
      size_t src = n - pos, dst = out.size();
      hint = LZ4F_decompress(d.get(), out.data(), &dst, in.data() + pos, &src, nullptr);
      if (LZ4F_isError(hint)) throw IoError(what + ": corrupt LZ4 frame: " + LZ4F_getErrorName(hint));
      pos += src;
      total += static_cast<int64_t>(dst);
      if (total > max_bytes) too_large(what, max_bytes);
      write(out.data(), dst);
    }
    // Decoded bytes that did not fit `out` wait in the context.
    while (hint != 0) {
      size_t src = 0, dst = out.size();
      hint = LZ4F_decompress(d.get(), out.data(), &dst, nullptr, &src, nullptr);
      if (LZ4F_isError(hint)) throw IoError(what + ": corrupt LZ4 frame: " + LZ4F_getErrorName(hint));
      total += static_cast<int64_t>(dst);
      if (total > max_bytes) too_large(what, max_bytes);
      write(out.data(), dst);
      if (dst == 0) break;
    }
  }
  if (hint != 0) throw IoError(what + ": truncated LZ4 frame (the object ends inside it)");
  return total;
}

}  // namespace

bool is_object_codec(const std::string& codec) {
  return codec == "none" || codec == "zstd" || codec == "lz4";
}

CompressedSizes compress_shard_file(const fs::path& in, const fs::path& out, const std::string& codec,
                                    int level) {
  if (codec != "zstd" && codec != "lz4")
    throw ConfigError("shard compression '" + codec + "': expected zstd or lz4");
  if (codec == "zstd" && (level < 0 || level > ZSTD_maxCLevel()))
    throw ConfigError("zstd compression level " + std::to_string(level) + ": expected 1.." +
                      std::to_string(ZSTD_maxCLevel()) + " (0: the default, 3)");
  if (codec == "lz4" && (level < 0 || level > LZ4F_compressionLevel_max()))
    throw ConfigError("lz4 compression level " + std::to_string(level) + ": expected 1.." +
                      std::to_string(LZ4F_compressionLevel_max()) +
                      " (0: the default, fast; 3 and up: LZ4-HC)");
  CompressedSizes s;
  std::error_code ec;
  s.plain_bytes = static_cast<int64_t>(fs::file_size(in, ec));
  if (ec) throw IoError("cannot stat " + in.string() + ": " + ec.message());
  s.plain_checksum = checksum_file(in.string());
  {
    File fi = open_file(in, "rb", "compressing " + in.string());
    File fo = open_file(out, "wb", "compressing " + in.string());
    const CodecRead r = reader_of(fi.get(), in);
    const CodecWrite w = writer_of(fo.get(), out);
    if (codec == "zstd")
      compress_zstd(r, w, s.plain_bytes, level);
    else
      compress_lz4(r, w, s.plain_bytes, level);
    close_written(fo, out);
  }
  s.bytes = static_cast<int64_t>(fs::file_size(out, ec));
  if (ec) throw IoError("cannot stat " + out.string() + ": " + ec.message());
  s.checksum = checksum_file(out.string());
  return s;
}

int64_t decompress_stream(const std::string& codec, const CodecRead& read, const CodecWrite& write,
                          int64_t max_bytes, const std::string& what) {
  if (codec == "zstd") return decompress_zstd(read, write, max_bytes, what);
  if (codec == "lz4") return decompress_lz4(read, write, max_bytes, what);
  throw ConfigError(what + ": unknown shard compression '" + codec + "' (expected zstd or lz4)");
}

std::string object_codec_of_file(const fs::path& path) {
  uint8_t m[4] = {};
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f || std::fread(m, 1, 4, f.get()) != 4) return "";
  const uint32_t magic = m[0] | (m[1] << 8) | (m[2] << 16) | (static_cast<uint32_t>(m[3]) << 24);
  if (magic == ZSTD_MAGICNUMBER) return "zstd";
  if (magic == 0x184D2204u) return "lz4";  // LZ4F_MAGICNUMBER
  return "";
}

int64_t decompress_shard_file(const fs::path& in, const fs::path& out, const std::string& codec,
                              int64_t max_bytes, const std::string& what) {
  File fi = open_file(in, "rb", what);
  File fo = open_file(out, "wb", what);
  const int64_t n =
      decompress_stream(codec, reader_of(fi.get(), in), writer_of(fo.get(), out), max_bytes, what);
  close_written(fo, out);
  return n;
}

int64_t decompress_shard_bytes(const uint8_t* frame, size_t n, const fs::path& out, const std::string& codec,
                               int64_t max_bytes, const std::string& what) {
  size_t pos = 0;
  const CodecRead read = [&](uint8_t* buf, size_t cap) {
    const size_t k = std::min(cap, n - pos);
    std::memcpy(buf, frame + pos, k);
    pos += k;
    return k;
  };
  File fo = open_file(out, "wb", what);
  const int64_t total = decompress_stream(codec, read, writer_of(fo.get(), out), max_bytes, what);
  close_written(fo, out);
  return total;
}

}  // namespace strata::data
