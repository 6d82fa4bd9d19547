// Flat LambdaCDM background and linear theory: the power spectrum the initial
// field is drawn from and the growth factor D(a) that scales it in time.
// Units: k in h/Mpc, lengths in Mpc/h, P(k) in (Mpc/h)^3 at z = 0.
#pragma once

namespace datagen {

struct Cosmology {  // Planck-2018-like
    double omega_m = 0.31, omega_b = 0.049, h = 0.677, n_s = 0.965, sigma8 = 0.81, t_cmb = 2.7255;
};

class LinearPower {
public:
    explicit LinearPower(const Cosmology& c);  // normalises the amplitude to c.sigma8
    double operator()(double k) const;          // P(k) at z = 0
    double sigma(double r) const;               // rms linear overdensity in a top-hat sphere of radius r

private:
    double transfer(double k) const;  // Eisenstein & Hu (1998) "no-wiggle" fit
    Cosmology c_;
    double amplitude_ = 1;
};

// Linear growth factor of flat LambdaCDM, D(a) / D(1).
double growth_factor(const Cosmology& c, double a);

}  // namespace datagen
