#include "plot.hpp"

#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "font5x7.hpp"

namespace plot {

Canvas::Canvas(int width, int height, Rgb background)
    : w_(width), h_(height), pixels_(static_cast<std::size_t>(width) * height * 3) {
  for (std::size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

void Canvas::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  std::uint8_t* p = &pixels_[(static_cast<std::size_t>(y) * w_ + x) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) set(x, y, c);
}

void Canvas::rect(int x0, int y0, int x1, int y1, Rgb c) {
  fill_rect(x0, y0, x1, y0, c);
  fill_rect(x0, y1, x1, y1, c);
  fill_rect(x0, y0, x0, y1, c);
  fill_rect(x1, y0, x1, y1, c);
}

void Canvas::disc(double cx, double cy, double radius, Rgb c) {
  const int x0 = static_cast<int>(std::floor(cx - radius)), x1 = static_cast<int>(std::ceil(cx + radius));
  const int y0 = static_cast<int>(std::floor(cy - radius)), y1 = static_cast<int>(std::ceil(cy + radius));
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      const double dx = x - cx, dy = y - cy;
      if (dx * dx + dy * dy <= radius * radius) set(x, y, c);
    }
}

void Canvas::line(double x0, double y0, double x1, double y1, double width, Rgb c) {
  const double length = std::hypot(x1 - x0, y1 - y0);
  const int steps = std::max(1, static_cast<int>(std::ceil(length * 2)));
  for (int i = 0; i <= steps; ++i) {
    const double t = static_cast<double>(i) / steps;
    disc(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, width / 2, c);
  }
}

namespace {
const std::uint8_t* glyph(char ch) {
  const int i = static_cast<unsigned char>(ch);
  return font5x7[(i >= 0x20 && i <= 0x7E) ? i - 0x20 : '?' - 0x20];
}
}  // namespace

void Canvas::text(int x, int y, const std::string& s, int scale, Rgb c) {
  for (std::size_t k = 0; k < s.size(); ++k) {
    const std::uint8_t* g = glyph(s[k]);
    const int gx = x + static_cast<int>(k) * 6 * scale;
    for (int col = 0; col < 5; ++col)
      for (int row = 0; row < 8; ++row)
        if (g[col] & (1u << row))
          fill_rect(gx + col * scale, y + row * scale, gx + col * scale + scale - 1,
                    y + row * scale + scale - 1, c);
  }
}

void Canvas::text_up(int x, int y, const std::string& s, int scale, Rgb c) {
  // Glyph column `col` goes up the page; glyph row `row` goes right.
  for (std::size_t k = 0; k < s.size(); ++k) {
    const std::uint8_t* g = glyph(s[k]);
    const int gy = y - static_cast<int>(k) * 6 * scale;
    for (int col = 0; col < 5; ++col)
      for (int row = 0; row < 8; ++row)
        if (g[col] & (1u << row))
          fill_rect(x + row * scale, gy - col * scale - scale + 1, x + row * scale + scale - 1,
                    gy - col * scale, c);
  }
}

namespace {
void append(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<unsigned char>*>(context);
  const auto* p = static_cast<const unsigned char*>(data);
  try {
    out->insert(out->end(), p, p + size);
  } catch (...) {
    out->clear();  // reported as a failed encoding; nothing may unwind through stb's C code
  }
}
}  // namespace

// stb's file writer ignores fwrite's and fclose's results, so the PNG is encoded into memory and
// written here with every step checked.
bool Canvas::write_png(const std::string& path) const {
  std::vector<unsigned char> png;
  if (stbi_write_png_to_func(append, &png, w_, h_, 3, pixels_.data(), w_ * 3) == 0 || png.empty())
    return false;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool written = std::fwrite(png.data(), 1, png.size(), f) == png.size() && std::fflush(f) == 0;
  return std::fclose(f) == 0 && written;
}

// ---- chart ----------------------------------------------------------------------------------------

namespace {

constexpr Rgb kWhite{255, 255, 255}, kBlack{30, 30, 30}, kGrid{225, 225, 225},
    kAxis{90, 90, 90};

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over span.
double nice_step(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

int decimals_for(double step) {
  int d = 0;
  while (d < 6 && std::abs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-9)
    ++d;
  return d;
}

std::string format(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// Widens [lo, hi] to multiples of a nice step; returns the step.
double nice_range(double& lo, double& hi, int target) {
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.1, 0.05);
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, target);
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
  return step;
}

void data_range(const Chart& c, bool right, bool x, double& lo, double& hi) {
  lo = std::numeric_limits<double>::infinity();
  hi = -lo;
  for (const Series& s : c.series) {
    if (!x && s.right_axis != right) continue;
    for (double v : x ? s.x : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
}

}  // namespace

bool write_chart_png(const Chart& c, const std::string& path, int width, int height) {
  Canvas cv(width, height, kWhite);
  const int left = 100, right = width - 100, top = 70, bottom = height - 80;

  // Ranges and ticks.
  double xlo = c.x_lo, xhi = c.x_hi, llo = c.left_lo, lhi = c.left_hi, rlo = c.right_lo,
         rhi = c.right_hi;
  if (xlo == xhi) data_range(c, false, true, xlo, xhi);
  if (llo == lhi) data_range(c, false, false, llo, lhi);
  if (rlo == rhi) {
    data_range(c, true, false, rlo, rhi);
    const double pad = (rhi - rlo) * 0.08;  // keep points off the frame
    rlo -= pad;
    rhi += pad;
  }
  const double xstep = nice_range(xlo, xhi, 8);
  const double lstep = nice_range(llo, lhi, 5);
  const double rstep = nice_range(rlo, rhi, 5);
  auto px = [&](double x) { return left + (x - xlo) / (xhi - xlo) * (right - left); };
  auto py = [&](double y, bool r) {
    const double lo = r ? rlo : llo, hi = r ? rhi : lhi;
    return bottom - (y - lo) / (hi - lo) * (bottom - top);
  };

  // Grid (at the left axis' ticks) and ticks.
  const int lxd = decimals_for(xstep), ld = decimals_for(lstep), rd = decimals_for(rstep);
  for (double v = llo; v <= lhi + lstep * 1e-6; v += lstep) {
    const int y = static_cast<int>(std::lround(py(v, false)));
    cv.fill_rect(left + 1, y, right - 1, y, kGrid);
    cv.fill_rect(left - 6, y, left, y, kAxis);
    const std::string s = format(v, ld);
    cv.text(left - 10 - Canvas::text_width(s, 2), y - 7, s, 2, kBlack);
  }
  for (double v = rlo; v <= rhi + rstep * 1e-6; v += rstep) {
    const int y = static_cast<int>(std::lround(py(v, true)));
    cv.fill_rect(right, y, right + 6, y, kAxis);
    cv.text(right + 10, y - 7, format(v, rd), 2, kBlack);
  }
  for (double v = xlo; v <= xhi + xstep * 1e-6; v += xstep) {
    const int x = static_cast<int>(std::lround(px(v)));
    cv.fill_rect(x, top + 1, x, bottom - 1, kGrid);
    cv.fill_rect(x, bottom, x, bottom + 6, kAxis);
    const std::string s = format(v, lxd);
    cv.text(x - Canvas::text_width(s, 2) / 2, bottom + 12, s, 2, kBlack);
  }
  cv.rect(left, top, right, bottom, kAxis);

  // Labels and title.
  cv.text((left + right - Canvas::text_width(c.x_label, 2)) / 2, bottom + 44, c.x_label, 2,
          kBlack);
  const Rgb left_color = [&] {
    for (const Series& s : c.series)
      if (!s.right_axis) return s.color;
    return kBlack;
  }();
  const Rgb right_color = [&] {
    for (const Series& s : c.series)
      if (s.right_axis) return s.color;
    return kBlack;
  }();
  cv.text_up(18, (top + bottom + Canvas::text_width(c.left_label, 2)) / 2, c.left_label, 2,
             left_color);
  cv.text_up(width - 32, (top + bottom + Canvas::text_width(c.right_label, 2)) / 2,
             c.right_label, 2, right_color);
  cv.text((width - Canvas::text_width(c.title, 3)) / 2, 22, c.title, 3, kBlack);

  // Curves, clipped to the plot area by construction of the ranges.
  for (const Series& s : c.series) {
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t i = 0; i + 1 < n; ++i)
      cv.line(px(s.x[i]), py(s.y[i], s.right_axis), px(s.x[i + 1]), py(s.y[i + 1], s.right_axis),
              2.5, s.color);
    if (s.markers || n == 1)
      for (std::size_t i = 0; i < n; ++i) cv.disc(px(s.x[i]), py(s.y[i], s.right_axis), 5, s.color);
  }

  // Legend, in the corner of the plot area that the curves cross least.
  int legend_w = 0;
  for (const Series& s : c.series) legend_w = std::max(legend_w, Canvas::text_width(s.label, 2));
  legend_w += 64;
  const int legend_h = static_cast<int>(c.series.size()) * 26 + 12;
  int lx = right - legend_w - 12, ly = top + 12;
  long best = -1;
  for (const auto& [cx, cy] : {std::pair{right - legend_w - 12, top + 12},
                               std::pair{left + 12, top + 12},
                               std::pair{right - legend_w - 12, bottom - legend_h - 12},
                               std::pair{left + 12, bottom - legend_h - 12}}) {
    long hits = 0;  // curve samples under the box
    for (const Series& s : c.series) {
      const std::size_t n = std::min(s.x.size(), s.y.size());
      for (std::size_t i = 0; i < n; ++i)
        for (int k = 0; k < 64; ++k) {
          const double t = k / 64.0;
          const std::size_t j = std::min(i + 1, n - 1);
          const double x = px(s.x[i] + (s.x[j] - s.x[i]) * t);
          const double y = py(s.y[i] + (s.y[j] - s.y[i]) * t, s.right_axis);
          hits += x >= cx - 20 && x <= cx + legend_w + 20 && y >= cy - 20 && y <= cy + legend_h + 20;
        }
    }
    if (best < 0 || hits < best) best = hits, lx = cx, ly = cy;
  }
  cv.fill_rect(lx, ly, lx + legend_w, ly + legend_h, kWhite);
  cv.rect(lx, ly, lx + legend_w, ly + legend_h, kAxis);
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const int y = ly + 19 + static_cast<int>(i) * 26;
    cv.line(lx + 10, y, lx + 44, y, 3, s.color);
    if (s.markers) cv.disc(lx + 27, y, 5, s.color);
    cv.text(lx + 54, y - 7, s.label, 2, kBlack);
  }
  return cv.write_png(path);
}

}  // namespace plot
