# R's survreg Weibull fit on every bundled data set: the reference values of tests/weibull/r_reference/survreg.json
# (read by tests/weibull/test_mle_against_r.py; R is not needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5; apt-get install r-base-core r-cran-survival), from the repository root:
#     Rscript tools/r_reference/survreg.R
#
# survreg(Surv(time, event) ~ 1, dist = "weibull") with its convergence rule tightened (rel.tolerance = 1e-14), so
# the values are the maximum of the likelihood to the last digits. dpsurv's shape is 1 / survreg's scale and its
# scale exp(intercept); the standard errors are those of the intercept and of log(scale) (= -log shape). survreg
# refuses a time of 0: for the data sets that hold some, the fit is on the other rows and the fixture says how many
# were left out (dpsurv's mle refuses them too; the test fits the same rows).
suppressPackageStartupMessages({library(survival); library(jsonlite)})
bundled <- "dpsurv_core/data/bundled"
control <- survreg.control(rel.tolerance = 1e-14, toler.chol = 1e-15, maxiter = 200)
outcome <- list(
  lung = c("time", "status"), kidney = c("time", "status"), leukemia = c("time", "status"),
  gehan = c("time", "cens"), mgus2 = c("futime", "death"), myeloid = c("futime", "death"),
  ovarian = c("futime", "fustat"), stanford2 = c("time", "status"), veteran = c("time", "status"),
  pbc = c("time", "status"), transplant = c("futime", "event"), flchain = c("futime", "death"))
event_code <- list(pbc = 2, transplant = "death")

out <- list(generated_by = "tools/r_reference/survreg.R", r_version = R.version.string,
            survival_version = as.character(packageVersion("survival")), fits = list())
for (name in names(outcome)) {
  d <- read.csv(file.path(bundled, paste0(name, ".csv")), stringsAsFactors = FALSE)
  y <- outcome[[name]]
  ev <- d[[y[2]]]
  ev <- if (!is.null(event_code[[name]])) as.integer(ev == event_code[[name]]) else as.integer(ev)
  frame <- data.frame(time = d[[y[1]]], event = ev)
  frame <- frame[!is.na(frame$time) & !is.na(frame$event), ]
  zero <- sum(frame$time <= 0)
  frame <- frame[frame$time > 0, ]
  fit <- survreg(Surv(time, event) ~ 1, data = frame, dist = "weibull", control = control)
  se <- sqrt(diag(vcov(fit)))
  out$fits[[length(out$fits) + 1]] <- list(
    data = name, n = nrow(frame), events = sum(frame$event), zero_times_left_out = zero,
    max_time = max(frame$time), shape = 1 / fit$scale, scale = exp(unname(coef(fit))),
    intercept = unname(coef(fit)), log_scale = log(fit$scale), se_intercept = unname(se[1]),
    se_log_scale = unname(se[2]), loglik = fit$loglik[2], iterations = fit$iter)
}
dir.create("tests/weibull/r_reference", showWarnings = FALSE, recursive = TRUE)
writeLines(toJSON(out, digits = I(17), auto_unbox = TRUE, pretty = FALSE),
           "tests/weibull/r_reference/survreg.json")
