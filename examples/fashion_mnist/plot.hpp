// A tiny rasteriser for training curves: an RGB canvas with lines, rectangles, discs and text in
// a built-in 5x7 bitmap font, and a two-axis line chart written as PNG through stb_image_write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plot {

struct Rgb {
  std::uint8_t r, g, b;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return w_; }
  int height() const { return h_; }
  void set(int x, int y, Rgb c);
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);  // inclusive corners
  void rect(int x0, int y0, int x1, int y1, Rgb c);       // outline, 1 px
  void disc(double cx, double cy, double radius, Rgb c);
  // A line of the given width (pixels), drawn as discs along the segment.
  void line(double x0, double y0, double x1, double y1, double width, Rgb c);
  // Text with its top-left corner at (x, y); each font pixel becomes scale x scale pixels.
  void text(int x, int y, const std::string& s, int scale, Rgb c);
  // Text turned 90 degrees counter-clockwise (reading upwards), its bottom-left corner at (x, y).
  void text_up(int x, int y, const std::string& s, int scale, Rgb c);
  static int text_width(const std::string& s, int scale) {
    return s.empty() ? 0 : static_cast<int>(s.size()) * 6 * scale - scale;
  }
  static int text_height(int scale) { return 7 * scale; }
  // Writes the canvas as PNG; false on failure.
  bool write_png(const std::string& path) const;

 private:
  int w_, h_;
  std::vector<std::uint8_t> pixels_;
};

struct Series {
  std::string label;
  std::vector<double> x, y;
  Rgb color;
  bool right_axis = false;  // plotted against the right-hand y axis
  bool markers = false;     // a disc at every point
};

struct Chart {
  std::string title, x_label, left_label, right_label;
  std::vector<Series> series;
  // Axis ranges; when lo == hi the range is chosen from the data.
  double x_lo = 0, x_hi = 0, left_lo = 0, left_hi = 0, right_lo = 0, right_hi = 0;
};

// Renders the chart (axes, ticks with labels, grid, legend, curves) and writes it as PNG.
bool write_chart_png(const Chart& chart, const std::string& path, int width = 960,
                     int height = 600);

}  // namespace plot
