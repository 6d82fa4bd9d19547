// Formulas: Eisenstein & Hu 1998 (ApJ 496, 605) eqs. 26-31 for the transfer
// function; the growth factor is the exact integral for matter + Lambda,
// D(a) ~ E(a) * int_0^a da' / (a' E(a'))^3 (Heath 1977). Both are cheap and only
// evaluated a few thousand times (tables, normalisation), so plain Simpson sums do.
#include "cosmology.h"

#include <cmath>

namespace datagen {
namespace {

template <class F>
double simpson(F f, double a, double b, int n) {  // n even
    const double h = (b - a) / n;
    double s = f(a) + f(b);
    for (int i = 1; i < n; ++i) s += f(a + i * h) * (i % 2 ? 4 : 2);
    return s * h / 3;
}

double tophat(double x) {  // Fourier transform of a unit top-hat sphere
    if (x < 1e-3) return 1 - x * x / 10;
    return 3 * (std::sin(x) - x * std::cos(x)) / (x * x * x);
}

}  // namespace

LinearPower::LinearPower(const Cosmology& c) : c_(c) {
    const double s8 = sigma(8.0);
    amplitude_ = c.sigma8 * c.sigma8 / (s8 * s8);
}

double LinearPower::transfer(double k) const {
    const double theta = c_.t_cmb / 2.7, h = c_.h;
    const double om = c_.omega_m * h * h, ob = c_.omega_b * h * h, fb = c_.omega_b / c_.omega_m;
    const double s = 44.5 * std::log(9.83 / om) / std::sqrt(1 + 10 * std::pow(ob, 0.75));  // sound horizon, Mpc
    const double alpha = 1 - 0.328 * std::log(431 * om) * fb + 0.38 * std::log(22.3 * om) * fb * fb;
    const double ks = 0.43 * k * h * s;
    const double gamma = c_.omega_m * h * (alpha + (1 - alpha) / (1 + ks * ks * ks * ks));
    const double q = k * theta * theta / gamma;
    const double l0 = std::log(2 * M_E + 1.8 * q), c0 = 14.2 + 731 / (1 + 62.5 * q);
    return l0 / (l0 + c0 * q * q);
}

double LinearPower::operator()(double k) const {
    if (k <= 0) return 0;
    const double t = transfer(k);
    return amplitude_ * std::pow(k, c_.n_s) * t * t;
}

double LinearPower::sigma(double r) const {
    // sigma^2 = int dlnk k^3 P(k) W^2(kr) / (2 pi^2)
    const double var = simpson(
        [&](double lnk) {
            const double k = std::exp(lnk), w = tophat(k * r);
            return k * k * k * (*this)(k) * w * w;
        },
        std::log(1e-5), std::log(1e3), 8000);
    return std::sqrt(var / (2 * M_PI * M_PI));
}

double growth_factor(const Cosmology& c, double a) {
    const double ol = 1 - c.omega_m;
    auto e = [&](double x) { return std::sqrt(c.omega_m / (x * x * x) + ol); };
    auto d = [&](double x) {
        // (a' E)^-3 = (om/a' + ol a'^2)^-3/2, written so that a' = 0 is finite (0).
        const double i = simpson([&](double y) { return std::pow(c.omega_m / y + ol * y * y, -1.5); }, 1e-12, x, 4000);
        return e(x) * i;
    };
    return d(a) / d(1.0);
}

}  // namespace datagen
